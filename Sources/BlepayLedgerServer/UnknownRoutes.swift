import BlepayLedger
import Hummingbird

/// Answers a path or method no route takes with the API's JSON error (`not-found`), as every other refusal is
/// answered, rather than the HTTP server's empty 404.
struct UnknownRoutes<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            return LedgerAPI.response(APIError.notFound("route"))
        }
    }
}
