import BlepayBLE
import BlepayConfiguration
import BlepayDaemonStore
import BlepayLedger
import BlepayLedgerClient
import BlepayPayments
import BlepayProtocol
import ServiceLifecycle
import Synchronization

/// `blepayd customer`: receives payment requests over BLE from start until stopped, serves `org.blepay.Customer1`,
/// and on SIGTERM ends every open payment with its event before it exits.
public enum CustomerDaemon {
    /// The daemon's services, in the order a ServiceGroup starts them (and stops them in reverse).
    public static func services(_ context: DaemonContext, notify: SystemdNotify = SystemdNotify()) -> [any Service] {
        let readiness = Readiness(["bus", "bluetooth"]) {
            notify.ready(status: "receiving payments on \(context.configuration.adapter)")
        }
        let settings = CustomerTransport.Configuration(
            trustedLedgerKeys: context.trustedLedgerKeys,
            identityLifetime: .seconds(context.configuration.identityLifetimeSeconds),
            renewsAddress: context.configuration.renewAddress, l2cap: context.configuration.l2cap)
        let vouchers = customerVouchers(context)
        let reachability = LedgerReachability(ledger: context.ledger, logger: context.logger, meaning: (
            reachable: "the ledger is reachable; an offline business's payments are executed here",
            unreachable: "the ledger is unreachable; an offline business's payments are made under a pre-authorization"),
            metrics: context.metrics)
        let advertised = Advertised()
        let advertise: @Sendable () -> Void = {
            let online: Capabilities = reachability.isReachable ? .online : []
            advertised.set(online.union(vouchers.holdsUsable() ? .preAuthorization : []))
        }
        let renewal = VoucherAutoRenew.Settings(context.configuration.vouchers).map {
            VoucherAutoRenew(settings: $0, vouchers: vouchers, clock: context.clock, logger: context.logger)
        }
        // The signed pairs this customer paid under a voucher, settled by it too if its business does not get there
        // first: no device holds the only copy.
        // With them, the ledger's deny list: a revoked or blocked merchant is refused offline too.
        let settlement = OfflineSettlement(
            queue: SettlementQueue(store: context.store), ledger: context.ledger,
            settings: .init(interval: .seconds(context.configuration.ledgerProbeSeconds), limits: .unlimited),
            denyList: DenyListRefresh(
                store: DenyListStore(store: context.store), ledger: context.ledger.once(timeoutSeconds: 5),
                trusted: context.trustedLedgerKeys, maximumAgeMilliseconds: 86_400_000, minimumInterval: .seconds(900), clock: context.clock,
                logger: context.logger),
            reachability: reachability, metrics: context.metrics, clock: context.clock, logger: context.logger)
        let history = HistoryRecorder.daemon(context)
        let service = CustomerService(
            links: {
                let transport = CustomerTransport(
                    adapter: context.adapter, configuration: settings, capabilities: advertised.capabilities,
                    logger: context.logger, clock: context.clock)
                advertised.attach(transport)
                return CustomerService.Links(transport: transport) {
                    try await transport.run { readiness.report("bluetooth") }
                }
            },
            signer: vouchers.signer(context.identity.signingKey) { reachability.isReachable },
            ledger: LedgerBackend(client: context.ledger), settlement: settlement,
            accepted: StoredAcceptances(store: AcceptedPaymentStore(store: context.store), clock: context.clock,
                logger: context.logger),
            ledgerKeys: context.trustedLedgerKeys, history: history, clock: context.clock, logger: context.logger)
        let refunds = RefundWatch(
            ledger: context.ledger, trusted: context.trustedLedgerKeys, deviceKey: context.identity.signingKey.publicKey,
            history: history.history, logger: context.logger)
        return [
            HealthService(
                notify: notify, adapter: context.adapter, control: context.control,
                working: "receiving payments on \(context.configuration.adapter)", logger: context.logger),
            history.retention(days: context.configuration.historyRetentionDays),
            // What the advertisement says, and who pays an offline business's request, follow the ledger's reach.
            LinkService(name: "AdvertisementService") {
                let changes = reachability.changes()
                advertise()
                for await _ in changes { advertise() }
            },
            // At each answer to the standing call (`SettlementService`), vouchers are renewed when due, refunds learnt,
            // and what the advertisement says is looked at again (a voucher may have expired). One at a time, and one
            // obtained is advertised at once.
            LinkService(name: "LedgerContactService") {
                for await _ in settlement.ledgerAnswers {
                    if case .obtained? = await renewal?.renewIfDue() { advertise() }
                    await refunds.poll()
                    advertise()
                }
            },
            // Its verdicts are signalled by the control API, as the business's are.
            LinkService(name: "SettlementService") {
                await withDiscardingTaskGroup { group in
                    group.addTask { await settlement.run() }
                    group.addTask { for await list in settlement.newDenyLists { await service.denyListReceived(list) } }
                }
            },
            ControlService {
                try await CustomerControl.serve(
                    service, on: context.control, name: context.configuration.busName, wallet: wallet(context, reachability),
                    vouchers: vouchers, settlement: settlement, refunds: refunds, clock: context.clock,
                    logger: context.logger, ready: { readiness.report("bus") })
            },
            PaymentService(notify: notify, serve: { await service.run() }, shutdown: { await service.shutdown() }),
        ]
    }
}

/// The customer's vouchers: issued by the ledger to its device key, kept in its state file.
private func customerVouchers(_ context: DaemonContext) -> CustomerVouchers {
    let wallet = VoucherWallet(
        store: context.store, deviceKey: context.identity.signingKey.publicKey, trusting: context.trustedLedgerKeys)
    return CustomerVouchers(wallet: wallet, ledger: context.controlLedger, clock: context.clock)
}

/// The customer's instruments at the ledger, through its device credentials, asked once for at most 10 s (well
/// within a control call's time), or 3 s while the ledger was last found unreachable. If it does not answer, the
/// list it last gave stands in, so that a customer who is offline can still accept (with balances as they were).
/// The ledger is asked even when believed unreachable: one probe that timed out while it was busy must not show a
/// balance from before the payment just made.
private func wallet(_ context: DaemonContext, _ reachability: LedgerReachability) -> CustomerControl.Wallet {
    let known = Mutex<[CustomerControl.Instrument]?>(nil)
    let asking = context.ledger.once(timeoutSeconds: 10)
    let trying = context.ledger.once(timeoutSeconds: 3)
    let ledger = context.controlLedger
    return CustomerControl.Wallet(
        list: { () throws(PaymentError) in
            let client = reachability.isReachable || known.withLock({ $0 }) == nil ? asking : trying
            do throws(LedgerClientError) {
                let instruments = try await client.instruments().map {
                    CustomerControl.Instrument(
                        id: $0.id, kind: $0.type.rawValue, description: $0.description, blocked: $0.blocked,
                        available: Dictionary($0.balances.map { ($0.currency, $0.available) }) { $1 })
                }
                known.withLock { $0 = instruments }
                reachability.record(true)
                return instruments
            } catch {
                if error.isUnavailable { reachability.record(false) }
                guard error.isUnavailable, let instruments = known.withLock({ $0 }) else { throw error.paymentError }
                return instruments
            }
        },
        addCard: { (number, month, year, cvc) throws(PaymentError) in
            do throws(LedgerClientError) {
                return try await ledger.addInstrument(
                    CreateInstrument(card: .init(number: number, expiryMonth: month, expiryYear: year, cvc: cvc))).id
            } catch {
                throw error.paymentError
            }
        })
}

/// What the customer advertises (online, holding a pre-authorization), handed to each registration's transport.
private final class Advertised: Sendable {
    private let state = Mutex<(capabilities: Capabilities, transport: CustomerTransport?)>(([.online], nil))

    var capabilities: Capabilities { state.withLock { $0.capabilities } }

    func attach(_ transport: CustomerTransport) { state.withLock { $0.transport = transport } }

    func set(_ capabilities: Capabilities) {
        let transport = state.withLock { state in
            state.capabilities = capabilities
            return state.transport
        }
        transport?.setCapabilities(capabilities)
    }
}
