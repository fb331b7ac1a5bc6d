import BlepayBLE
import BlepayConfiguration
import BlepayDaemonStore
import BlepayLedgerClient
import BlepayPayments
import BlepayProtocol
import ServiceLifecycle

/// `blepayd business`: scans for customers and serves them, serves `org.blepay.Business1`, executes accepted
/// payments with the ledger, and on SIGTERM cancels open requests and lets payments being executed finish.
public enum BusinessDaemon {
    /// The daemon's services, in the order a ServiceGroup starts them (and stops them in reverse).
    public static func services(_ context: DaemonContext, notify: SystemdNotify = SystemdNotify()) throws(DaemonError)
        -> [any Service]
    {
        guard let certificate = context.identity.certificate, let noiseKey = context.identity.noiseKey else {
            throw DaemonError(.certificateInvalid, "a business needs its merchant certificate and Noise key")
        }
        let readiness = Readiness(["bus", "bluetooth"]) {
            notify.ready(status: "scanning for customers on \(context.configuration.adapter)")
        }
        let presented = PresentedCertificate(certificate)
        let renewal = try CertificateRenewal(
            presenting: presented, identity: context.identity, configuration: context.configuration,
            ledger: context.ledger, trusted: context.trustedLedgerKeys, clock: context.clock, logger: context.logger)
        let transport = BusinessTransport(
            adapter: context.adapter,
            configuration: .init(
                staticKey: noiseKey, certificate: presented,
                maximumConnections: context.configuration.maximumConnections, l2cap: context.configuration.l2cap),
            logger: context.logger, clock: context.clock)
        let history = HistoryRecorder.daemon(context)
        let service = BusinessService(
            links: BusinessService.Links(transport: transport) { try await transport.run { readiness.report("bluetooth") } },
            ledger: LedgerBackend(client: context.ledger), signer: context.identity.signingKey,
            merchant: .init(id: certificate.merchantID, name: certificate.merchantName), offline: offline(context),
            ledgerKeys: context.trustedLedgerKeys,
            settings: .init(
                requestLifetimeSeconds: context.configuration.requestLifetimeSeconds,
                maximumTipPercent: context.configuration.maximumTipPercent),
            history: history, clock: context.clock, logger: context.logger)
        let refunds = MerchantRefunds(
            ledger: context.controlLedger, trusted: context.trustedLedgerKeys, history: history.history, logger: context.logger)
        return [
            HealthService(
                notify: notify, adapter: context.adapter, control: context.control,
                working: "scanning for customers on \(context.configuration.adapter)", logger: context.logger),
            history.retention(days: context.configuration.historyRetentionDays),
            ProbeService(interval: CertificateRenewal.checkInterval) { _ = await renewal.renewIfDue() },
            LinkService { try await service.serveLinks() },
            ControlService {
                try await BusinessControl.serve(
                    service, on: context.control, name: context.configuration.busName, refunds: refunds,
                    logger: context.logger, ready: { readiness.report("bus") })
            },
            PaymentService(notify: notify, serve: { await service.runPayments() }, shutdown: { await service.shutdown() }),
        ]
    }
}

/// What the business takes while the ledger cannot be reached, kept in its state file until settled; nil when the
/// configuration turns offline payments off.
private func offline(_ context: DaemonContext) -> (policy: OfflinePolicy, settlement: OfflineSettlement)? {
    let settings = context.configuration.offline
    guard settings.enabled, let currency = try? Currency(settings.currency) else { return nil }
    let limits = SettlementQueue.Limits(
        maximumCount: settings.maximumPendingCount, maximumTotalMinorUnits: UInt64(settings.maximumPendingTotal),
        maximumAgeMilliseconds: UInt64(settings.maximumPendingHours) * 3_600_000,
        maximumPerVoucherMinorUnits: UInt64(settings.maximumPendingPerVoucher))
    let denyListAge = UInt64(settings.maximumDenyListHours) * 3_600_000
    let settlement = OfflineSettlement(
        queue: SettlementQueue(store: context.store), ledger: context.ledger,
        settings: .init(interval: .seconds(settings.settleIntervalSeconds), limits: limits),
        denyList: DenyListRefresh(
            store: DenyListStore(store: context.store), ledger: context.ledger.once(timeoutSeconds: 5),
            trusted: context.trustedLedgerKeys, maximumAgeMilliseconds: denyListAge, clock: context.clock, logger: context.logger),
        metrics: context.metrics, clock: context.clock, logger: context.logger)
    let policy = OfflinePolicy(
        trusted: context.trustedLedgerKeys, currency: currency, maximumPaymentMinorUnits: UInt64(settings.maximumPayment),
        maximumDenyListAgeMilliseconds: denyListAge)
    return (policy, settlement)
}
