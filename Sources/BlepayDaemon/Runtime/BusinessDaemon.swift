import BlepayBLE
import BlepayConfiguration
import BlepayLedgerClient
import BlepayPayments
import BlepayProtocol
import ServiceLifecycle

/// `blepayd business`: scans for customers and serves them, serves `org.blepay.Business1`, executes accepted
/// payments with the ledger, and on SIGTERM cancels open requests and lets payments being executed finish.
public struct BusinessDaemon: Service, CustomStringConvertible {
    private let context: DaemonContext
    private let notify: SystemdNotify

    public init(context: DaemonContext, notify: SystemdNotify = SystemdNotify()) {
        self.context = context
        self.notify = notify
    }

    public var description: String { "BusinessDaemon(\(context))" }

    public func run() async throws {
        let (context, notify) = (context, notify)
        guard let certificate = context.identity.certificate, let noiseKey = context.identity.noiseKey else {
            throw DaemonError(.certificateInvalid, "a business needs its merchant certificate and Noise key")
        }
        let readiness = Readiness(["bus", "bluetooth"]) {
            notify.ready(status: "scanning for customers on \(context.configuration.adapter)")
        }
        let transport = BusinessTransport(
            adapter: context.adapter,
            configuration: .init(
                staticKey: noiseKey, certificate: certificate,
                maximumConnections: context.configuration.maximumConnections),
            logger: context.logger, clock: context.clock)
        let service = BusinessService(
            links: BusinessService.Links(transport: transport) {
                try await transport.run { readiness.report("bluetooth") }
            },
            ledger: LedgerBackend(client: context.ledger), signer: context.identity.signingKey,
            merchant: .init(id: certificate.merchantID, name: certificate.merchantName),
            settings: .init(
                requestLifetimeSeconds: context.configuration.requestLifetimeSeconds,
                maximumTipPercent: context.configuration.maximumTipPercent),
            clock: context.clock, logger: context.logger)
        try await DaemonPart.run(
            notify: notify, links: { await service.run() },
            control: {
                try await BusinessControl.serve(
                    service, on: context.control, name: context.configuration.busName, logger: context.logger,
                    ready: { readiness.report("bus") })
            }, shutdown: { await service.shutdown() })
    }
}
