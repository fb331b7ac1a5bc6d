import BlepayLedgerStore
import BlepayProtocol
import Logging
import ServiceLifecycle

/// Reloads the ledger's key files every `interval` while it runs, so that a successor created with
/// `blepay-ledger rotate-key` is published, and one made active with `activate-key` signs, without a restart. A
/// file that cannot be read leaves the keys as they were.
struct KeyReload: Service {
    let configuration: LedgerConfiguration
    let keyring: LedgerKeyring
    let interval: Duration
    let logger: Logger

    func run() async {
        await cancelWhenGracefulShutdown { await reload() }
    }

    private func reload() async {
        while (try? await Task.sleep(for: interval)) != nil {
            do {
                let keys = try LedgerKeyFiles.load(configuration)
                let before = keyring.current
                guard keys.resources != before.resources else { continue }
                keyring.replace(with: keys)
                logger.notice("ledger keys reloaded", metadata: [
                    "active": "\(TrustedLedgerKeys.keyID(of: keys.active.publicKey))", "published": "\(keys.entries.count)",
                ])
            } catch {
                logger.error("the ledger's key files cannot be read; the keys stay as they were", metadata: [
                    "error": "\(error)",
                ])
            }
        }
    }
}
