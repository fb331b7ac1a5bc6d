import BlepayLedger
import BlepayLedgerStore
import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization

/// `GET /v1/changes`: a device's standing call. It answers at once when what the device follows (the deny list, the
/// refunds of its payments) no longer matches the token it gives, else holds the answer until it does or `wait`
/// seconds pass. A daemon keeps one such call open instead of polling: while nothing changes, neither side wakes;
/// a ledger that goes away ends the call (a shutdown answers it at once), and a daemon that goes away ends the hold
/// (`CallerPresence`). A device holds at most `HeldCalls.perDevice` at a time; more are answered at once.
extension LedgerAPI {
    /// The longest a call may ask to be held.
    static let longestChangeWait = 300
    /// While writes keep coming, a held call reads again at most this often: under a stream of payments each device
    /// costs a read a second, not one a payment.
    static let changeReadInterval: Duration = .seconds(1)
    /// How often a held call reads again when other ledger processes write the same database (PostgreSQL), whose
    /// changes wake nothing here.
    static let sharedDatabaseChangePoll: Duration = .seconds(5)

    func changes(_ request: Request, on channel: any Channel) async -> Response {
        let head = Head(request)
        do {
            let wait = try Self.changeWait(request.uri.queryParameters.get("wait").map { String($0) })
            let after = request.uri.queryParameters.get("after").map { String($0) }
            _ = try await screen(head, body: [], access: .device)
            var seen = await watch.changes
            let (device, first) = try await storage.write { tx in
                let device = try self.authenticate(head, body: [], parameters: [:], access: .device, tx).device
                return (device, try self.operations.changes(tx, for: device))
            }
            let holds = wait > 0 && heldCalls.take(device.id)
            defer { if holds { heldCalls.release(device.id) } }
            let caller = try await CallerPresence.on(channel)
            var current = first
            var read = ContinuousClock.now
            let deadline = read + .seconds(holds ? wait : 0)
            while current.token == after, ContinuousClock.now < deadline, !Task.isShuttingDownGracefully, !caller.isGone {
                let wake = watch.pollInterval == nil ? deadline : min(deadline, .now + Self.sharedDatabaseChangePoll)
                await caller.whilePresent { [watch, seen, read] in
                    await cancelWhenGracefulShutdown {
                        await watch.nextChange(after: seen, before: wake, polling: false)
                        try? await Task.sleep(until: min(read + Self.changeReadInterval, deadline))
                    }
                }
                seen = await watch.changes
                read = .now
                current = try await storage.read { tx in try self.operations.changes(tx, for: device) }
            }
            return Self.response(Answer(status: 200, body: try Self.encode(current)))
        } catch {
            return Self.response(failure(error, head))
        }
    }

    /// `wait`: whole seconds, 0 (the default) to `longestChangeWait`.
    static func changeWait(_ text: String?) throws(APIError) -> Int {
        guard let text else { return 0 }
        guard let seconds = Int(text), (0...longestChangeWait).contains(seconds) else {
            throw APIError.invalid("wait", "out-of-range", "wait is 0 to \(longestChangeWait) seconds")
        }
        return seconds
    }
}

/// How many standing calls each device has held: a daemon holds one, and a few more are let through (a restart whose
/// old call the ledger has not seen end yet). Beyond that a call is answered at once rather than held, so that no
/// device can take the ledger's connections by holding calls.
final class HeldCalls: Sendable {
    static let perDevice = 4
    private let held = Mutex<[String: Int]>([:])

    /// Whether `device` may hold one more; if so, it is counted until `release`.
    func take(_ device: String) -> Bool {
        held.withLock { held in
            guard held[device, default: 0] < Self.perDevice else { return false }
            held[device, default: 0] += 1
            return true
        }
    }

    func release(_ device: String) {
        held.withLock { held in
            let left = held[device, default: 1] - 1
            held[device] = left > 0 ? left : nil
        }
    }
}
