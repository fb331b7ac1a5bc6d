import BlepayLedger
import BlepayLedgerStore
import Hummingbird

/// The HTTP API (`docs/ledger-openapi.yaml`): each route names who may call it and the operation it runs.
extension LedgerAPI {
    func routes() -> Router<LedgerRequestContext> {
        let router = Router(context: LedgerRequestContext.self)
        router.add(middleware: UnknownRoutes())
        let operations = self.operations
        // Up means able to answer: the database gives a read (503 `storage.unavailable` when it cannot).
        route(router, .get, "/v1/health", .anyone) { _, tx in
            _ = try tx.row("SELECT MAX(version) FROM schema_version", [])
            return ["status": "ok"]
        }
        // The operator's scrape (Prometheus with the admin token as its bearer credentials).
        router.get("/metrics") { request, _ in
            guard self.isAdmin(Head(request)) else { return LedgerAPI.response(APIError.unauthenticated) }
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: self.metrics.registry.emitToBuffer())))
        }
        route(router, .get, "/v1/ledger-key", .anyone) { _, _ in operations.ledgerKeyResource }
        route(router, .get, "/v1/ledger-keys", .anyone) { _, _ in LedgerKeyList(keys: operations.keyring.current.resources) }

        // The operator.
        route(router, .post, "/v1/accounts", .admin, success: 201) { call, tx in
            try operations.createAccount(tx, try call.decode(CreateAccount.self), at: call.now)
        }
        route(router, .get, "/v1/accounts/:id", .admin) { call, tx in
            try operations.account(tx, call.parameter("id"), for: .admin)
        }
        route(router, .post, "/v1/instruments/:id/deposits", .admin) { call, tx in
            try operations.deposit(tx, instrument: call.parameter("id"), try call.decode(Deposit.self), at: call.now)
        }
        route(router, .post, "/v1/instruments/:id/block", .admin) { call, tx in
            try operations.block(tx, instrument: call.parameter("id"), blocked: true)
        }
        route(router, .post, "/v1/instruments/:id/unblock", .admin) { call, tx in
            try operations.block(tx, instrument: call.parameter("id"), blocked: false)
        }
        route(router, .get, "/v1/double-spends", .admin) { _, tx in try operations.doubleSpends(tx) }
        route(router, .get, "/v1/accounts", .admin) { call, tx in
            let kind = try call.query("kind").map(LedgerOperations.accountKind)
            return try operations.accounts(tx, kind: kind, limit: try call.integer("limit") ?? 100, after: call.query("after"))
        }
        route(router, .post, "/v1/accounts/:id/enrollment-tokens", .admin, success: 201) { call, tx in
            try operations.issueEnrollmentToken(tx, account: call.parameter("id"), at: call.now)
        }
        route(router, .get, "/v1/accounts/:id/devices", .admin) { call, tx in
            try operations.devices(tx, account: call.parameter("id"))
        }
        route(router, .post, "/v1/accounts/:id/block", .admin) { call, tx in
            try operations.block(tx, account: call.parameter("id"), blocked: true, at: call.now)
        }
        route(router, .post, "/v1/accounts/:id/unblock", .admin) { call, tx in
            try operations.block(tx, account: call.parameter("id"), blocked: false, at: call.now)
        }
        route(router, .post, "/v1/devices/:id/revoke", .admin) { call, tx in
            try operations.revoke(tx, device: call.parameter("id"), at: call.now)
        }

        // Enrollment.
        route(router, .post, "/v1/devices", .enrollment, success: 201) { call, tx in
            guard case .enrolling(let token) = call.caller else { throw APIError.unauthenticated }
            return try operations.enroll(tx, token: token, try call.decode(RegisterDevice.self), at: call.now)
        }

        // Devices.
        route(router, .get, "/v1/account", .device) { call, tx in
            let device = try call.device
            return try operations.account(tx, device.account, for: .device(device))
        }
        route(router, .post, "/v1/instruments", .device, success: 201) { call, tx in
            try operations.addInstrument(tx, try call.decode(CreateInstrument.self), device: try call.device, at: call.now)
        }
        route(router, .get, "/v1/instruments", .device) { call, tx in
            InstrumentList(instruments: try operations.instruments(tx, account: try call.device.account))
        }
        route(router, .get, "/v1/instruments/:id", .device) { call, tx in
            try operations.instrument(tx, call.parameter("id"), account: try call.device.account)
        }
        route(router, .post, "/v1/payments", .device, success: 201) { body, deviceKey in
            Anticipation(decoding: body, as: CreatePayment.self) { LedgerOperations.checkSignatures(of: $0, deviceKey: deviceKey) }
        } operation: { call, tx in
            try operations.createPayment(tx, try call.decode(CreatePayment.self), device: try call.device, at: call.now,
                signatures: call.signatures)
        }
        route(router, .get, "/v1/payments", .deviceOrAdmin) { call, tx in
            try operations.listPayments(tx, try PaymentQuery(queries: call.queries), for: call.principal)
        }
        router.get("/v1/payments/:id") { request, context in
            await self.payment(request, id: context.parameters.get("id") ?? "")
        }
        route(router, .post, "/v1/payments/:id/acceptance", .device) { body, _ in
            Anticipation(decoding: body, as: AcceptPayment.self) { LedgerOperations.checkSignatures(of: $0) }
        } operation: { call, tx in
            try operations.acceptPayment(tx, id: call.parameter("id"), try call.decode(AcceptPayment.self),
                device: try call.device, at: call.now, signatures: call.signatures)
        }
        route(router, .post, "/v1/payments/:id/cancel", .device) { call, tx in
            // Without a body, a cancel of a payment the ledger knows, as before the body existed.
            let body = call.body.isEmpty ? PaymentCancellation(request: nil) : try call.decode(PaymentCancellation.self)
            return try operations.cancelPayment(tx, id: call.parameter("id"), body, device: try call.device, at: call.now)
        }
        route(router, .post, "/v1/payments/:id/refunds", .deviceOrAdmin, success: 201) { call, tx in
            try operations.refund(tx, payment: call.parameter("id"), try call.decode(CreateRefund.self),
                merchant: call.query("merchant"), for: call.principal, at: call.now)
        }
        route(router, .get, "/v1/payments/:id/refunds", .deviceOrAdmin) { call, tx in
            try operations.refunds(tx, payment: call.parameter("id"), merchant: call.query("merchant"), for: call.principal)
        }
        route(router, .get, "/v1/refunds", .deviceOrAdmin) { call, tx in
            try operations.refunds(tx, after: call.query("after"), limit: try call.integer("limit") ?? 100,
                merchant: call.query("merchant"), for: call.principal)
        }
        route(router, .get, "/v1/reports/daily", .deviceOrAdmin) { call, tx in
            try operations.dailyReport(tx, date: call.query("date"), timeZone: call.query("timeZone"),
                merchant: call.query("merchant"), for: call.principal)
        }
        route(router, .post, "/v1/pre-authorizations", .device, success: 201) { call, tx in
            try operations.createPreAuthorization(tx, try call.decode(CreatePreAuthorization.self),
                device: try call.device, at: call.now)
        }
        route(router, .get, "/v1/pre-authorizations/:id", .device) { call, tx in
            try operations.preAuthorization(tx, id: call.parameter("id"), account: try call.device.account)
        }
        route(router, .post, "/v1/pre-authorizations/:id/void", .device) { call, tx in
            try operations.voidPreAuthorization(tx, id: call.parameter("id"), device: try call.device, at: call.now)
        }
        route(router, .post, "/v1/settlements", .device) { call, tx in
            try operations.settle(tx, try call.decode(SettlementBatch.self), device: try call.device, at: call.now)
        }
        route(router, .post, "/v1/device/certificate", .device) { call, tx in
            try operations.renewCertificate(tx, device: try call.device, at: call.now)
        }
        route(router, .get, "/v1/deny-list", .device) { call, tx in try operations.denyList(tx, at: call.now) }
        router.get("/v1/changes") { request, context in await self.changes(request, on: context.channel) }
        return router
    }

    private func route(_ router: Router<LedgerRequestContext>, _ method: HTTPRequest.Method, _ path: RouterPath,
        _ access: Access, success: Int = 200, anticipate: Anticipate? = nil, operation: @escaping Operation)
    {
        router.on(path, method: method) { request, context in
            var parameters: [String: String] = [:]
            if let id = context.parameters.get("id") { parameters["id"] = id }
            let started = ContinuousClock.now
            let response = await self.respond(to: request, parameters: parameters, access: access, success: success,
                anticipate: anticipate, operation: operation)
            self.metrics.answered(method.rawValue, "\(path)", status: response.status.code, after: .now - started)
            return response
        }
    }

    private func route(_ router: Router<LedgerRequestContext>, _ method: HTTPRequest.Method, _ path: RouterPath,
        _ access: Access, success: Int = 200, _ operation: @escaping Operation)
    {
        route(router, method, path, access, success: success, anticipate: nil, operation: operation)
    }
}
