import Glibc
import NIOPosix
import Testing
@testable import BlepayService

/// The executors blepayd runs on instead of libdispatch's: tasks and their timers on NIO's event loops, the main actor
/// on one thread that waits for jobs.
@Suite struct EventLoopExecutorsTests {
    /// Two sleepers with deadlines a second apart, from one instant: they wake in the order of their deadlines, never
    /// before them, on the loops. (20 ms and 60 ms, each from its own start, woke out of order on a loaded machine.)
    @Test func tasksAndTheirSleepsRunOnTheEventLoops() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let executor = EventLoopTaskExecutor(group)
        let order = Order()
        let start = ContinuousClock.now
        await withTaskExecutorPreference(executor) {
            await withTaskGroup(of: Void.self) { tasks in
                for (name, deadline) in [("late", start + .seconds(1)), ("early", start + .milliseconds(20))] {
                    tasks.addTask {
                        let onLoop = MultiThreadedEventLoopGroup.currentEventLoop != nil
                        try? await Task.sleep(until: deadline)
                        await order.record(name, onLoop: onLoop && MultiThreadedEventLoopGroup.currentEventLoop != nil,
                            slept: ContinuousClock.now >= deadline)
                    }
                }
            }
        }
        try await group.shutdownGracefully()
        #expect(await order.names == ["early", "late"])
        #expect(await order.allOnLoops)
        #expect(await order.noneEarly)
    }

    @Test func aCancelledSleepEndsAtOnce() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let sleeper = Task(executorPreference: EventLoopTaskExecutor(group)) {
            try await Task.sleep(for: .seconds(3_600))
        }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        try await group.shutdownGracefully()
    }

    /// Seconds beyond `Int64`'s nanoseconds wait forever rather than overflow into a sleep that ends at once.
    @Test func delaysConvertWithoutOverflow() {
        #expect(EventLoopTaskExecutor.nanoseconds(.milliseconds(1_500)) == 1_500_000_000)
        #expect(EventLoopTaskExecutor.nanoseconds(.seconds(Int64.max)) == .max)
        #expect(EventLoopTaskExecutor.nanoseconds(.seconds(-5)) == 0)
    }

    @Test func theMainExecutorRunsItsJobsOnTheThreadThatRunsItUntilStopped() async throws {
        let main = MainThreadExecutor()
        let runner = RunningThread { try? main.run() }
        let actor = OnExecutor(main)
        #expect(await actor.thread() == runner.id)
        #expect(await actor.thread() == runner.id)
        main.stop()
        runner.join()
    }
}

private actor Order {
    var names: [String] = []
    var allOnLoops = true
    var noneEarly = true
    func record(_ name: String, onLoop: Bool, slept: Bool) {
        names.append(name)
        allOnLoops = allOnLoops && onLoop
        noneEarly = noneEarly && slept
    }
}

/// An actor whose jobs run on a given executor, so a test can see which thread runs them.
private actor OnExecutor {
    let executor: MainThreadExecutor
    init(_ executor: MainThreadExecutor) { self.executor = executor }
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    func thread() -> pthread_t { pthread_self() }
}

/// A POSIX thread running `body`, with its id known before the test goes on.
private final class RunningThread: @unchecked Sendable {
    private var handle = pthread_t()
    private let body: () -> Void
    var id: pthread_t { handle }

    init(_ body: @escaping () -> Void) {
        self.body = body
        let box = Unmanaged.passRetained(self).toOpaque()
        pthread_create(&handle, nil, { argument in
            Unmanaged<RunningThread>.fromOpaque(argument!).takeRetainedValue().body()
            return nil
        }, box)
    }

    func join() { pthread_join(handle, nil) }
}
