import ArgumentParser
import BlepayLedgerServer
import Foundation

// The signing key's rotation (`docs/operations.md`): a successor is created and published at once, trusted by every
// daemon, then activated. A running ledger picks each step up from its key files within seconds.

/// Prints one line per key: id, status, public key.
struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "keys", abstract: "List the ledger's signing keys with their ids and status.")

    @OptionGroup var options: Options

    func run() throws {
        let keys = try LedgerKeyFiles.load(try options.load())
        for key in keys.resources { print("\(key.keyId) \(key.status ?? "") \(key.publicKey)") }
    }
}

struct RotateKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate-key",
        abstract: "Create the successor of the active signing key, published at once but not yet signing.",
        discussion: """
            Add the printed public key to every daemon's [ledger] public_keys, then make it sign with \
            activate-key. Exits 1 if a successor is already published.
            """)

    @OptionGroup var options: Options

    func run() throws {
        do {
            let key = try LedgerKeyFiles.rotate(try options.load())
            print("\(key.keyId) \(key.status ?? "") \(key.publicKey)")
        } catch let refusal as LedgerKeyFiles.Refusal {
            FileHandle.standardError.write(Data("blepay-ledger: \(refusal)\n".utf8))
            throw ExitCode(1)
        }
    }
}

struct ActivateKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activate-key",
        abstract: "Make the published successor the active signing key; the active one is retired, still published.",
        discussion: "Exits 1 if no published successor has this id.")

    @OptionGroup var options: Options

    @Argument(help: "The successor's key id, as rotate-key and keys print it.")
    var id: String

    func run() throws {
        do {
            let keys = try LedgerKeyFiles.activate(id, try options.load())
            for key in keys.resources { print("\(key.keyId) \(key.status ?? "") \(key.publicKey)") }
        } catch let refusal as LedgerKeyFiles.Refusal {
            FileHandle.standardError.write(Data("blepay-ledger: \(refusal)\n".utf8))
            throw ExitCode(1)
        }
    }
}
