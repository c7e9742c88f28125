import Foundation
import ObjectGraph

/// Runs Swift tasks under a simulation (Docs/simulation.md "Swift concurrency"): each job of a task that prefers
/// this executor is a block the scheduler runs on one of its workers, at the virtual time it was enqueued, so
/// `async` code such as `BatchImport` and `ManagedObjectContext.perform(_:) async` runs one step at a time like
/// the rest of the simulation. Jobs of different tasks may overlap in virtual time (a concurrent executor); the
/// jobs of one task follow each other, as Swift runs them.
public final class SimulatedTaskExecutor: TaskExecutor, @unchecked Sendable {  // immutable; enqueue is called by the thread holding the baton
    let scheduler: Scheduler

    init(scheduler: Scheduler) { self.scheduler = scheduler }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        scheduler.enqueue({ unowned.runSynchronously(on: executor) }, on: VirtualQueue(label: "swift-task", scheduler: scheduler))
    }
}

extension Scheduler {
    /// Runs `body` as a Swift task on this simulation and waits for it, in virtual time, on the calling thread.
    /// - Throws: what `body` throws.
    public func runTask<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let waiter = participantForWait("runTask")
        let outcome = TaskOutcome<T>()
        let executor = SimulatedTaskExecutor(scheduler: self)
        Task(executorPreference: executor) {
            do { outcome.result = .success(try await body()) } catch { outcome.result = .failure(error) }
            self.unpark(waiter)
        }
        park(waiter)
        return try outcome.result!.get()
    }
}

private final class TaskOutcome<T: Sendable>: @unchecked Sendable {  // written by the task's last job, read after the waiter is woken (baton order)
    var result: Result<T, any Error>?
}
