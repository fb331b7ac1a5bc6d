import CDBus
#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` on a new detached thread, named so that `top -H`, `ps -L` and backtraces show whose it is.
/// A plain pthread: the loop needs nothing of Foundation's `Thread`, and linking Foundation costs every blepay
/// program its ICU data.
func startLoopThread(named name: String, _ body: @escaping @Sendable () -> Void) {
    final class Start: Sendable {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) { (self.name, self.body) = (name, body) }
    }
    let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(&thread, nil, { argument in
        let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
        cdbus_name_thread(start.name)
        start.body()
        return nil
    }, start)
    precondition(result == 0, "pthread_create failed: \(result)")
    pthread_detach(thread)
}
