import Foundation
import Logging
import Testing
import TestSupport
@testable import BlepayService

/// Log entries as the journal takes them: a priority `journalctl -p` filters on, metadata as fields of their own,
/// never a secret, and a level that a reload changes for every logger at once.
@Suite struct JournalLogHandlerTests {
    @Test func anEntryCarriesItsPriorityAndItsMetadataAsFields() async throws {
        let journal = try NotifyListener()
        let level = LogLevelSetting(.info)
        let logger = Logger(label: "blepay.business") {
            JournalLogHandler(label: $0, level: level, sink: JournalSink(socketPath: journal.path))
        }
        logger.warning("acceptance refused", metadata: ["payment": "ab12", "code": "insufficient-funds", "device-token": "s3cret"])
        let lines = try await journal.next { $0.hasPrefix("BLEPAY_PAYMENT=") }
        #expect(lines.contains("MESSAGE=acceptance refused") && lines.contains("PRIORITY=4"))
        #expect(lines.contains("SYSLOG_IDENTIFIER=blepay.business") && lines.contains("BLEPAY_CODE=insufficient-funds"))
        #expect(lines.contains("BLEPAY_DEVICE_TOKEN=(redacted)") && !lines.joined().contains("s3cret"))
    }

    @Test func theSharedLevelChangesEveryLoggerAtOnce() async throws {
        let journal = try NotifyListener()
        let level = LogLevelSetting(.warning)
        let make = { (label: String) in
            Logger(label: label) { JournalLogHandler(label: $0, level: level, sink: JournalSink(socketPath: journal.path)) }
        }
        let (first, second) = (make("one"), make("two"))
        first.info("not shown")
        second.error("shown")
        level.level = .debug
        first.debug("shown after the reload")
        let messages = try await journal.next { $0 == "MESSAGE=shown after the reload" }.filter { $0.hasPrefix("MESSAGE=") }
        #expect(messages == ["MESSAGE=shown", "MESSAGE=shown after the reload"])
    }

    @Test func aValueWithANewlineIsSentWithItsLength() {
        let entry = JournalEntry(priority: 3, identifier: "blepay.ledger", message: "two\nlines", fields: [],
            file: "f", line: 1, function: "g")
        let expected = Array("MESSAGE\n".utf8) + [9, 0, 0, 0, 0, 0, 0, 0] + Array("two\nlines\n".utf8)
        #expect(Array(entry.datagram.prefix(expected.count)) == expected)
        #expect(JournalEntry.fieldName("payment-id") == "BLEPAY_PAYMENT_ID")
        #expect(entry.text(prefixed: true) == "<3>blepay.ledger: two\nlines\n")
    }

    @Test func aLineForATerminalStartsWithTheTimeInUTCAndTheLevel() {
        let entry = JournalEntry(priority: 6, identifier: "blepay.business", message: "payment event",
            fields: [("event", "offered")], file: "f", line: 1, function: "g")
        let time = Date(timeIntervalSince1970: 1_764_564_247.9)
        #expect(time.formatted(.iso8601) == "2025-12-01T04:44:07Z")
        #expect(entry.text(prefixed: false, at: time) == "2025-12-01T04:44:07Z info blepay.business: payment event event=offered\n")
        #expect(JournalEntry.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
    }

    @Test func aKeyNamingASecretIsRedactedWhateverItsCase() {
        for key in ["device-token", "Admin_Token", "CVC", "card_number", "client-secret", "PASSWORD"] {
            #expect(JournalLogHandler.isSecret(key), "\(key)")
        }
        for key in ["payment", "amount", "tok", "card"] { #expect(!JournalLogHandler.isSecret(key), "\(key)") }
    }
}
