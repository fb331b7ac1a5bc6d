import BlepayDaemonConfiguration
import BlepayLedgerClient

extension DaemonConfiguration {
    /// Which certificates the ledger may present.
    public var ledgerTrust: LedgerTrust { LedgerTrust(caFile: ledgerCAFile.map(resolve), pin: ledgerCertificatePin) }
}
