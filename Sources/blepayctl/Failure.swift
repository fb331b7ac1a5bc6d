import BlepayControl
import FoundationEssentials
import Glibc

/// A failure reported on one line, or with `--json` as one object `{"error":{"code","message","exit"}}`, on standard
/// error, with its exit code: 1 refused by the daemon, 3 the daemon cannot be reached, 4 the ledger cannot be
/// reached (the daemon answered, but what was asked needs the ledger), 5 a receipt that does not verify, 64 usage.
enum Failure: Error, CustomStringConvertible {
    /// The daemon refused: the message starts with the refusal's stable code (`not-found: …`).
    case refused(String)
    case ledgerOffline(String)
    case unreachable(String)

    var description: String {
        switch self {
        case .refused(let message), .ledgerOffline(let message), .unreachable(let message): message
        }
    }

    var exitCode: Int32 {
        switch self {
        case .refused: 1
        case .unreachable: 3
        case .ledgerOffline: 4
        }
    }

    /// The stable code a script can match on.
    var code: String {
        switch self {
        case .refused(let message): return ControlAPI.code(ofRefusal: message) ?? "refused"
        case .ledgerOffline: return "ledger-offline"
        case .unreachable: return "unreachable"
        }
    }

    /// Writes `message` on standard error as `--json` asks, and exits with `status`.
    static func exit(code: String, message: String, status: Int32, json: Bool) -> Never {
        var line = Data("blepayctl: \(message)\n".utf8)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let object = ["error": Body(code: code, message: message, exit: status)]
            line = ((try? encoder.encode(object)) ?? Data()) + Data("\n".utf8)
        }
        Output.write(line, to: STDERR_FILENO)
        Glibc.exit(status)
    }

    private struct Body: Encodable {
        let code: String
        let message: String
        let exit: Int32
    }
}
