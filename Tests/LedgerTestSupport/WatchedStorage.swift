import BlepayLedgerStore
import Synchronization

/// A storage that counts the write transactions asked of it.
public final class WatchedStorage: LedgerStorage {
    public let base: any LedgerStorage
    public let writes = Atomic<Int>(0)

    public init(_ base: any LedgerStorage) { self.base = base }

    public var dialect: SQLDialect { base.dialect }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        writes.add(1, ordering: .relaxed)
        return try await base.write(body)
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        try await base.read(body)
    }

    public func migrate() async throws { try await base.migrate() }
    public func close() async throws { try await base.close() }
}
