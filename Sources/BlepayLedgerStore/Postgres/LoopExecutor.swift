import NIOCore

/// Runs a task's jobs on one event loop, so that what the task does between two waits happens in one turn of that
/// loop (a PostgreSQL connection's: checking it is open and writing to it cannot be split by its closing).
final class LoopExecutor: TaskExecutor, Sendable {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
