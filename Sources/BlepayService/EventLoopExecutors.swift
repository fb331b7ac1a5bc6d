// Swift concurrency's executors for a daemon that should sleep while it has nothing to do. On Linux the runtime's
// default executors are libdispatch's: its worker pool, whose first use arms a workqueue monitor that wakes the
// process every second for as long as it lives, and its main queue. A daemon that runs `EventLoopExecutors.main`
// instead runs every task on NIO's event loops (which it uses for its I/O anyway), wakes a loop only for a job or a
// due timer, and runs the main actor on the process's main thread.
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
import Glibc
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

public enum EventLoopExecutors {
    /// Installs the executors, runs `body` as the first task and exits with 0 when it returns (`body` exits with its
    /// own status on failure). Call it from a synchronous `main` before any task exists: the runtime reads its
    /// executors once, when the first task is made.
    public static func main(_ body: @escaping @Sendable () async -> Void) -> Never {
        _createExecutors(factory: Factory.self)
        Task {
            await body()
            exit(0)
        }
        do {
            try Factory.mainExecutor.run()
        } catch {
            fatalError("the main executor failed: \(error)")
        }
        exit(0)
    }

    struct Factory: ExecutorFactory {
        static let mainExecutor: any MainExecutor = MainThreadExecutor()
        static var defaultExecutor: any TaskExecutor { EventLoopTaskExecutor.shared }
    }
}

/// Runs jobs on `MultiThreadedEventLoopGroup.singleton` (one loop per core) and schedules delayed jobs, such as
/// `Task.sleep`'s, as the loops' own timers, so an idle daemon's threads all wait in `epoll_wait`.
final class EventLoopTaskExecutor: TaskExecutor, SchedulingExecutor, @unchecked Sendable {
    static let shared = EventLoopTaskExecutor(MultiThreadedEventLoopGroup.singleton)

    private let group: MultiThreadedEventLoopGroup

    init(_ group: MultiThreadedEventLoopGroup) {
        self.group = group
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // `any()` keeps a job on the loop that enqueued it, so a task that wakes from its own I/O takes no hop.
        group.any().execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        let job = UnownedJob(job)
        // Both of the standard library's clocks measure in `Duration` (a clock measuring in another type has no
        // conversion here, and its job runs at once); NIO's timers run on the monotonic clock, which differs from
        // `ContinuousClock` only across a system suspend.
        let nanoseconds = (delay as? Duration).map(Self.nanoseconds) ?? 0
        group.any().scheduleTask(in: .nanoseconds(nanoseconds)) { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        enqueue(job, after: clock.now.duration(to: instant), tolerance: tolerance, clock: clock)
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        // NIO saturates a deadline past its range at "never", so a sleep of years waits rather than firing at once.
        if overflow { return seconds < 0 ? 0 : .max }
        let (total, carry) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return carry ? .max : max(0, total)
    }
}

/// The main actor's executor: the process's main thread, waiting on a condition until a job comes.
final class MainThreadExecutor: MainExecutor, @unchecked Sendable {
    private let jobs = ConditionLock(value: false)
    private var queue: [UnownedJob] = []
    private var stopped = false

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.lock()
        queue.append(job)
        jobs.unlock(withValue: true)
    }

    func run() throws {
        while true {
            jobs.lock(whenValue: true)
            let batch = queue
            queue.removeAll(keepingCapacity: true)
            let stop = stopped
            jobs.unlock(withValue: false)
            if stop { return }
            for job in batch { job.runSynchronously(on: asUnownedSerialExecutor()) }
        }
    }

    func stop() {
        jobs.lock()
        stopped = true
        jobs.unlock(withValue: true)
    }
}
