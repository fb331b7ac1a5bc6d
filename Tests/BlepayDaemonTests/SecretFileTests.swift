import BlepayConfiguration
import Foundation
import Testing

/// Secret files are created whole or not at all: many processes starting together all read the one that won, no
/// temporary file stays behind, and a directory that cannot be synced is a typed failure.
@Suite struct SecretFileTests {
    /// Rounds of sixteen creators in one process: with one temporary name per process, a late creator truncated
    /// the file another had just linked into place, or found it already unlinked ("No such file or directory").
    @Test(arguments: 0..<40) func creatorsRacingAllGetTheOneSecretWrittenAndNothingElseStays(round: Int) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-secret-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/signing.key"
        let results = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for n in 0..<16 {
                group.addTask { try SecretFile.loadOrCreate(path) { Array(repeating: UInt8(n + 1), count: 32) } }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let kept = try SecretFile.load(path)
        #expect(kept.count == 32 && kept.allSatisfy { $0 == kept[0] && $0 != 0 } && results.allSatisfy { $0 == kept })
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["signing.key"])
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func aDirectoryThatIsNotThereCannotBeSynced() {
        #expect(throws: SecretFile.Failure.self) { try DurableFile.syncDirectory(containing: "/nonexistent-\(UUID().uuidString)/x") }
    }
}
