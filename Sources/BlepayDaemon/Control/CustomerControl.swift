import BlepayControl
import BlepayPayments
import BlepayProtocol
import DBusKit
import Logging

/// `org.blepay.Customer1` at `/org/blepay/Customer`, owned as `org.blepay.Customer` (or
/// `org.blepay.Customer.<instance>`): the reference SDK's customer calls as methods, its events as `PaymentEvent`
/// signals, `Receiving` as a property; its vouchers, and its copies of what its businesses kept for settlement.
public enum CustomerControl {
    /// An instrument as `ListInstruments` gives it.
    public struct Instrument: Sendable, Hashable {
        public let id: String
        public let kind: String
        public let description: String
        public let blocked: Bool
        /// What can be spent, in minor units, by currency.
        public let available: [String: Int64]

        public init(id: String, kind: String, description: String, blocked: Bool, available: [String: Int64]) {
            self.id = id
            self.kind = kind
            self.description = description
            self.blocked = blocked
            self.available = available
        }
    }

    /// The customer's instruments at the ledger: listed, and cards added (the number and CVC go to the ledger,
    /// which keeps only a token; the daemon neither stores nor logs them).
    public struct Wallet: Sendable {
        public let list: @Sendable () async throws(PaymentError) -> [Instrument]
        public let addCard: @Sendable (_ number: String, _ month: Int, _ year: Int, _ cvc: String) async throws(PaymentError)
            -> String

        public init(
            list: @escaping @Sendable () async throws(PaymentError) -> [Instrument],
            addCard: @escaping @Sendable (String, Int, Int, String) async throws(PaymentError) -> String
        ) {
            self.list = list
            self.addCard = addCard
        }
    }

    /// Exports the object, owns the bus name, and relays the service's events as signals until the calling task is
    /// cancelled; then releases the name.
    public static func serve(
        _ service: CustomerService, on connection: DBusConnection, name: String = ControlAPI.customerBusName,
        wallet: Wallet, vouchers: CustomerVouchers, settlement: OfflineSettlement? = nil, refunds: RefundWatch? = nil,
        clock: @escaping @Sendable () -> Timestamp, logger: Logger, ready: @Sendable () -> Void = {}
    ) async throws(DBusError) {
        let receiving = Receiving()
        let handlers = voucherHandlers(vouchers, clock: clock).merging(ControlAPI.settlementHandlers(settlement)) { $1 }
        let handle = try await connection.export(
            ControlAPI.customerPath, interfaces: [interface(service, wallet: wallet, receiving: receiving, more: handlers)])
        receiving.handle = handle
        // The daemon may have started receiving before the object was exported.
        await receiving.update(service)
        let (signals, relay) = AsyncStream<ControlEvent>.makeStream()
        async let relayed: Void = relayEvents(of: service, settlement, refunds, into: relay)
        try await ControlAPI.serve(
            handle, as: name, on: connection, interface: ControlAPI.customerInterface, events: signals,
            signal: \.signalArguments, logger: logger, ready: ready)
        await relayed
    }

    /// The service's events, the ledger's verdicts (`settled`, `settlementRefused`) on the copies this customer
    /// keeps, as the business signals its own, and the refunds learnt; until the service's events end.
    private static func relayEvents(
        of service: CustomerService, _ settlement: OfflineSettlement?, _ refunds: RefundWatch?,
        into relay: AsyncStream<ControlEvent>.Continuation
    ) async {
        await withTaskGroup(of: Void.self) { group in
            if let refunds {
                group.addTask { for await refund in refunds.events { relay.yield(ControlEvent(refund: refund)) } }
            }
            if let settlement {
                group.addTask {
                    for await verdict in settlement.events {
                        await service.history?.record(verdict)
                        relay.yield(ControlEvent(verdict))
                    }
                }
            }
            for await event in service.events { relay.yield(ControlEvent(event)) }
            group.cancelAll()
        }
        relay.finish()
    }

    /// Keeps the `Receiving` property in step with the service.
    private final class Receiving: @unchecked Sendable {
        // Set once, right after export and before the name is owned, so no call can see it unset.
        var handle: DBusObjectHandle?

        func update(_ service: CustomerService) async {
            try? await handle?.set(.boolean(await service.isReceiving), property: "Receiving", interface: ControlAPI.customerInterface)
        }
    }

    /// `ObtainVoucher`, `ListVouchers` and `VoidVoucher`.
    private static func voucherHandlers(_ vouchers: CustomerVouchers, clock: @escaping @Sendable () -> Timestamp)
        -> [String: DBusMethod.Handler]
    {
        [
            "ObtainVoucher": { call in
                let a = call.arguments
                let limit = try ControlAPI.money(a[1].decode(UInt64.self), a[2].decode(String.self))
                let (instrument, lifetime) = (try a[0].decode(String.self), try a[3].decode(UInt32.self))
                do throws(PaymentError) {
                    let stored = try await vouchers.obtain(
                        instrumentID: instrument, limit: limit, lifetimeSeconds: Int64(lifetime))
                    return [ControlVoucher(stored, at: clock()).dbusValue]
                } catch { throw ControlAPI.error(error) }
            },
            "ListVouchers": { _ in
                do throws(PaymentError) {
                    let now = clock()
                    return [.array(element: ControlVoucher.signature, try vouchers.list().map { ControlVoucher($0, at: now).dbusValue })]
                } catch { throw ControlAPI.error(error) }
            },
            "VoidVoucher": { call in
                let id = try call.arguments[0].decode(String.self)
                do throws(PaymentError) { try await vouchers.void(id) } catch { throw ControlAPI.error(error) }
                return []
            },
        ]
    }

    private static func interface(
        _ service: CustomerService, wallet: Wallet, receiving: Receiving, more: [String: DBusMethod.Handler]
    ) -> DBusInterface {
        let payments = ControlAPI.paymentHandlers(
            status: { await service.status(of: $0) }, list: { await service.shownPayments }, history: service.history?.history,
            unknown: "this daemon was shown no payment").merging(more) { $1 }
        return ControlAPI.interface(.customer, handlers: payments.merging([
            "StartReceiving": { _ in
                await service.startReceiving()
                await receiving.update(service)
                return []
            },
            "StopReceiving": { _ in
                await service.stopReceiving()
                await receiving.update(service)
                return []
            },
            "AcceptPayment": { call in
                let a = call.arguments
                let id = try ControlAPI.paymentID(a[0].decode(String.self))
                let amount = try ControlAPI.money(a[1].decode(UInt64.self), a[3].decode(String.self))
                let (tip, instrument, delegated) = (try a[2].decode(UInt64.self), try a[4].decode(String.self), try a[5].decode(Bool.self))
                do throws(PaymentError) {
                    try await service.accept(
                        id, amount: amount, tipMinorUnits: tip, instrumentID: instrument, delegated: delegated)
                } catch { throw ControlAPI.error(error) }
                return []
            },
            "CancelPayment": { call in
                let id = try ControlAPI.paymentID(call.arguments[0].decode(String.self))
                do throws(PaymentError) { try await service.cancel(id) } catch { throw ControlAPI.error(error) }
                return []
            },
            "ListInstruments": { _ in
                let list: [Instrument]
                do throws(PaymentError) { list = try await wallet.list() } catch { throw ControlAPI.error(error) }
                return [.array(element: "(sssba{sx})", list.map {
                    .structure([
                        .string($0.id), .string($0.kind), .string($0.description), .boolean($0.blocked),
                        .dictionary(key: "s", value: "x", $0.available.sorted { $0.key < $1.key }.map {
                            DBusDictEntry(key: .string($0.key), value: .int64($0.value))
                        }),
                    ])
                })]
            },
            "AddCard": { call in
                let a = call.arguments
                let (number, month, year, cvc) = (
                    try a[0].decode(String.self), try a[1].decode(UInt16.self), try a[2].decode(UInt16.self),
                    try a[3].decode(String.self))
                do throws(PaymentError) {
                    return [.string(try await wallet.addCard(number, Int(month), Int(year), cvc))]
                } catch { throw ControlAPI.error(error) }
            },
        ]) { $1 }, properties: ["Receiving": DBusProperty(.boolean(false))])
    }
}
