import DBusKit

/// The control API's methods, arguments named and typed once: the exported objects take their signatures from here,
/// and so does the introspection XML installed under `/usr/share/dbus-1/interfaces/` (`blepayctl interface`).
extension ControlAPI {
    /// A method's arguments in and out, as (name, complete type).
    package struct Method: Sendable {
        let input: [(String, String)]
        let output: [(String, String)]

        package init(_ input: [(String, String)] = [], _ output: [(String, String)] = []) {
            self.input = input
            self.output = output
        }

        /// Exported with `handler`.
        package func exported(_ handler: @escaping DBusMethod.Handler) -> DBusMethod {
            DBusMethod(
                input: DBusSignature(stringLiteral: input.map(\.1).joined()),
                output: DBusSignature(stringLiteral: output.map(\.1).joined()),
                inputNames: input.map(\.0), outputNames: output.map(\.0), handler)
        }
    }

    private static let paymentOut = [("payment", "(ssa{sv})")]
    private static let paymentsOut = [("payments", "a(ssa{sv})")]

    package static let customerMethods: [String: Method] = [
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

    package static let businessMethods: [String: Method] = [
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
    package static let settlementMethods: [String: Method] = [
        "SettlementStatus": Method([], [
            ("waiting", "u"), ("totals", "a{st}"), ("oldest_queued_at", "t"), ("ledger_reachable", "b"),
        ]),
        "ListSettlements": Method([], [("settlements", "a(ssa{sv})")]),
        "SettleNow": Method(),
    ]

    /// The interface with `handlers` by method name; a method without one refuses every call.
    package static func interface(
        _ role: DaemonRole, handlers: [String: DBusMethod.Handler], properties: [String: DBusProperty] = [:]
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

    /// `ListHistory` and `GetPayment`: the payments kept across restarts, with their events and refunds.
    package static let historyMethods: [String: Method] = [
        "ListHistory": Method([("filter", "a{sv}")], [("payments", "a(ssa{sv})"), ("next_cursor", "s")]),
        "GetPayment": Method(
            [("payment_id", "s")], [("payment", "(ssa{sv})"), ("events", "a(ssa{sv})"), ("refunds", "a(ssa{sv})")]),
    ]

    /// The interface's introspection XML, as installed for tools like `busctl` and `gdbus`.
    public static func introspectionXML(_ role: DaemonRole) -> String {
        interface(role, handlers: [:], properties: role == .customer ? ["Receiving": DBusProperty(.boolean(false))] : [:])
            .introspectionXML
    }
}
