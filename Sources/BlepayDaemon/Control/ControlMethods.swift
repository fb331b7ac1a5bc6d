import BlepayDaemonStore
import BlepayPayments
import BlepayProtocol
import DBusKit

/// The control API's methods, arguments named and typed once: the exported objects take their signatures from here,
/// and so does the introspection XML installed under `/usr/share/dbus-1/interfaces/` (`blepayctl interface`).
extension ControlAPI {
    /// A method's arguments in and out, as (name, complete type).
    struct Method: Sendable {
        let input: [(String, String)]
        let output: [(String, String)]

        init(_ input: [(String, String)] = [], _ output: [(String, String)] = []) {
            self.input = input
            self.output = output
        }

        /// Exported with `handler`.
        func exported(_ handler: @escaping DBusMethod.Handler) -> DBusMethod {
            DBusMethod(
                input: DBusSignature(stringLiteral: input.map(\.1).joined()),
                output: DBusSignature(stringLiteral: output.map(\.1).joined()),
                inputNames: input.map(\.0), outputNames: output.map(\.0), handler)
        }
    }

    static let paymentOut = [("payment", "(ssa{sv})")]
    static let paymentsOut = [("payments", "a(ssa{sv})")]

    static let customerMethods: [String: Method] = [
        "StartReceiving": Method(),
        "StopReceiving": Method(),
        "AcceptPayment": Method([
            ("payment_id", "s"), ("amount", "t"), ("tip", "t"), ("currency", "s"), ("instrument_id", "s"),
            ("delegated", "b"),
        ]),
        "CancelPayment": Method([("payment_id", "s")]),
        "ListInstruments": Method([], [("instruments", "a(sssba{sx})")]),
        "AddCard": Method([("number", "s"), ("expiry_month", "q"), ("expiry_year", "q"), ("cvc", "s")], [("instrument_id", "s")]),
        "PaymentStatus": Method([("payment_id", "s")], paymentOut),
        "ListPayments": Method([], paymentsOut),
        "ObtainVoucher": Method(
            [("instrument_id", "s"), ("amount", "t"), ("currency", "s"), ("lifetime_seconds", "u")],
            [("voucher", "(ssa{sv})")]),
        "ListVouchers": Method([], [("vouchers", "a(ssa{sv})")]),
        "VoidVoucher": Method([("voucher_id", "s")]),
    ].merging(settlementMethods) { $1 }.merging(historyMethods) { $1 }

    static let businessMethods: [String: Method] = [
        "SendPaymentRequest": Method([("amount", "t"), ("currency", "s"), ("reference", "s")], [("payment_id", "s")]),
        "CancelPayment": Method([("payment_id", "s")]),
        "PaymentStatus": Method([("payment_id", "s")], paymentOut),
        "ListPayments": Method([], paymentsOut),
        "RefundPayment": Method(
            [("payment_id", "s"), ("amount", "t"), ("reason", "s"), ("request_id", "s")], [("refund", "(ssa{sv})")]),
        "DailyReport": Method([("date", "s"), ("time_zone", "s")], [
            ("merchant_id", "s"), ("date", "s"), ("time_zone", "s"), ("currencies", "a(suttutx)"),
        ]),
    ].merging(settlementMethods) { $1 }.merging(historyMethods) { $1 }

    /// Both daemons keep payments taken offline until the ledger settles them: the business what it accepted, the
    /// customer its copies of what its businesses kept.
    static let settlementMethods: [String: Method] = [
        "SettlementStatus": Method([], [
            ("waiting", "u"), ("totals", "a{st}"), ("oldest_queued_at", "t"), ("ledger_reachable", "b"),
        ]),
        "ListSettlements": Method([], [("settlements", "a(ssa{sv})")]),
        "SettleNow": Method(),
    ]

    /// The interface with `handlers` by method name; a method without one refuses every call.
    static func interface(
        _ role: DaemonConfiguration.Role, handlers: [String: DBusMethod.Handler], properties: [String: DBusProperty] = [:]
    ) -> DBusInterface {
        let (table, name) = role == .customer ? (customerMethods, customerInterface) : (businessMethods, businessInterface)
        let methods = table.reduce(into: [String: DBusMethod]()) { methods, entry in
            methods[entry.key] = entry.value.exported(handlers[entry.key] ?? { _ in
                throw DBusError.reply(name: "org.freedesktop.DBus.Error.NotSupported", "\(entry.key) is not served here")
            })
        }
        return DBusInterface(
            name, methods: methods, properties: properties, signals: [eventSignal: eventSignature],
            signalArgumentNames: [eventSignal: eventArgumentNames])
    }

    /// `PaymentStatus` and `ListPayments`, which both daemons answer from their machines' records, then from the
    /// history (`ListPayments`: its newest page), so that a restart does not empty them; and `ListHistory` and
    /// `GetPayment`.
    static func paymentHandlers(
        status: @escaping @Sendable (PaymentID) async -> PaymentSnapshot?,
        list: @escaping @Sendable () async -> [PaymentSnapshot], history: PaymentHistory?, unknown: String
    ) -> [String: DBusMethod.Handler] {
        let handlers: [String: DBusMethod.Handler] = [
            "PaymentStatus": { call in
                let id = try paymentID(call.arguments[0].decode(String.self))
                if let snapshot = await status(id) { return [ControlPayment(snapshot).dbusValue] }
                guard let kept = try read({ () throws(DaemonStoreError) in try history?.payment(id) }) else {
                    throw error(PaymentError(.notFound, "\(unknown) \(id)"))
                }
                return [ControlPayment(kept.payment).dbusValue]
            },
            "ListPayments": { _ in
                let current = await list().map { ControlPayment($0) }
                let kept = try read { () throws(DaemonStoreError) in try history?.list(HistoryQuery(limit: HistoryQuery.limits.upperBound)).payments ?? [] }
                let known = Set(current.map(\.paymentID))
                let earlier = kept.map { ControlPayment($0) }.filter { !known.contains($0.paymentID) }
                return [.array(element: ControlPayment.signature, (current + earlier).map(\.dbusValue))]
            },
        ]
        return handlers.merging(historyHandlers(history)) { $1 }
    }

    /// `SettlementStatus`, `ListSettlements` and `SettleNow`, from the daemon's settlement (none: each refuses).
    static func settlementHandlers(_ settlement: OfflineSettlement?) -> [String: DBusMethod.Handler] {
        [
            "SettlementStatus": { _ in
                do throws(PaymentError) {
                    let (waiting, reachable) = try kept(settlement).status()
                    let totals = waiting.totals.sorted { $0.key < $1.key }.map {
                        DBusDictEntry(key: .string($0.key), value: .uint64($0.value))
                    }
                    return [
                        .uint32(UInt32(waiting.count)), .dictionary(key: "s", value: "t", totals),
                        .uint64(waiting.oldest?.millisecondsSince1970 ?? 0), .boolean(reachable),
                    ]
                } catch { throw ControlAPI.error(error) }
            },
            "ListSettlements": { _ in
                do throws(PaymentError) {
                    let entries = try kept(settlement).entries()
                    return [.array(element: ControlSettlement.signature, entries.map { ControlSettlement($0).dbusValue })]
                } catch { throw ControlAPI.error(error) }
            },
            "SettleNow": { _ in
                do throws(PaymentError) { try kept(settlement).settleNow() } catch { throw ControlAPI.error(error) }
                return []
            },
        ]
    }

    private static func kept(_ settlement: OfflineSettlement?) throws(PaymentError) -> OfflineSettlement {
        guard let settlement else { throw PaymentError(.notFound, "this daemon takes no offline payments") }
        return settlement
    }

    /// The interface's introspection XML, as installed for tools like `busctl` and `gdbus`.
    public static func introspectionXML(_ role: DaemonConfiguration.Role) -> String {
        interface(role, handlers: [:], properties: role == .customer ? ["Receiving": DBusProperty(.boolean(false))] : [:])
            .introspectionXML
    }
}
