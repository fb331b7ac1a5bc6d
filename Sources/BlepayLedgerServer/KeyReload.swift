import BlepayLedgerStore
import BlepayProtocol
import Logging
import ServiceLifecycle

/// Reloads the ledger's key files when `blepay-ledger rotate-key` or `activate-key` rewrites their listing
/// (`ledger-keys.json`, watched with inotify), so that a successor is published, and one made active signs, without a
/// restart and without waking the ledger in between. Where the directory cannot be watched, they are read again
/// every `interval`. A file that cannot be read leaves the keys as they were.
struct KeyReload: Service, CustomStringConvertible {
    var description: String { "KeyReload" }
    let configuration: LedgerConfiguration
    let keyring: LedgerKeyring
    let interval: Duration
    let logger: Logger

    func run() async {
        await cancelWhenGracefulShutdown {
            let listing = configuration.resolve(LedgerKeyFiles.listingFile)
            let directory = String(listing[..<(listing.lastIndex(of: "/") ?? listing.startIndex)])
            do {
                try await FileChanges.watch(directory.isEmpty ? "." : directory) { name in
                    if name == LedgerKeyFiles.listingFile { reload() }
                }
            } catch where !Task.isCancelled {
                logger.warning("the key files cannot be watched; they are read again every \(interval)", metadata: [
                    "error": "\(error)",
                ])
                while (try? await Task.sleep(for: interval)) != nil { reload() }
            } catch {}
        }
    }

    private func reload() {
        do {
            let keys = try LedgerKeyFiles.load(configuration)
            let before = keyring.current
            guard keys.resources != before.resources else { return }
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
