import BlepayLedgerStore
import Synchronization

/// A storage that counts the transactions asked of it, and fails every transaction while `unavailable`, as a
/// database that went away would.
public final class WatchedStorage: LedgerStorage {
    public let base: any LedgerStorage
    public let writes = Atomic<Int>(0)
    public let reads = Atomic<Int>(0)
    public let unavailable = Atomic<Bool>(false)

    public init(_ base: any LedgerStorage) { self.base = base }

    public var dialect: SQLDialect { base.dialect }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        writes.add(1, ordering: .relaxed)
        try check()
        return try await base.write(body)
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        reads.add(1, ordering: .relaxed)
        try check()
        return try await base.read(body)
    }

    private func check() throws(StorageError) {
        if unavailable.load(ordering: .relaxed) { throw StorageError(.unavailable, "the database went away") }
    }

    public func migrate() async throws { try await base.migrate() }
    public func close() async throws { try await base.close() }
}
