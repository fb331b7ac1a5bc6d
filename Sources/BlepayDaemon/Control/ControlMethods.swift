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
    ]

    static let businessMethods: [String: Method] = [
        "SendPaymentRequest": Method([("amount", "t"), ("currency", "s"), ("reference", "s")], [("payment_id", "s")]),
        "CancelPayment": Method([("payment_id", "s")]),
        "PaymentStatus": Method([("payment_id", "s")], paymentOut),
        "ListPayments": Method([], paymentsOut),
        "SettlementStatus": Method([], [
            ("waiting", "u"), ("totals", "a{st}"), ("oldest_queued_at", "t"), ("ledger_reachable", "b"),
        ]),
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

    /// `PaymentStatus` and `ListPayments`, which both daemons answer from their machines' records.
    static func paymentHandlers(
        status: @escaping @Sendable (PaymentID) async -> PaymentSnapshot?,
        list: @escaping @Sendable () async -> [PaymentSnapshot], unknown: String
    ) -> [String: DBusMethod.Handler] {
        [
            "PaymentStatus": { call in
                let id = try paymentID(call.arguments[0].decode(String.self))
                guard let snapshot = await status(id) else { throw error(PaymentError(.notFound, "\(unknown) \(id)")) }
                return [ControlPayment(snapshot).dbusValue]
            },
            "ListPayments": { _ in [.array(element: ControlPayment.signature, await list().map { ControlPayment($0).dbusValue })] },
        ]
    }

    /// The interface's introspection XML, as installed for tools like `busctl` and `gdbus`.
    public static func introspectionXML(_ role: DaemonConfiguration.Role) -> String {
        interface(role, handlers: [:], properties: role == .customer ? ["Receiving": DBusProperty(.boolean(false))] : [:])
            .introspectionXML
    }
}
