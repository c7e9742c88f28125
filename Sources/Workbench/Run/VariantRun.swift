import Foundation
import ObjectGraph

/// One variant's run as its steps share it: what ``VariantRunner/prepare(in:simulation:baseline:wallStart:runStart:)``
/// built, and what the phases leave for the oracle and the figures. Used on the runner's thread only.
final class VariantRun {
    let simulation: Scheduler?
    let baseline: VariantRunner.MemoryBaseline
    /// When the variant began: wall time, and the run's clock (virtual in simulated mode).
    let wallStart: UInt64, runStart: UInt64
    let model: ManagedObjectModel
    let recorder: RunRecorder
    let main: SimulatedMainThread
    let storeURL: URL
    let stack: WorkbenchStack
    let control: VariantProgress
    let workload: Workload
    let ticker: ProgressTicker?
    let sampler: RunSampler
    /// Where a stop (Ctrl-C) ended the variant.
    var stoppedIn: String?
    /// The viewers on screen: a phase with viewers replaces those of the phases before it (Docs/scenarios.md).
    var viewers: [ViewerState] = []
    var migrators: [MigratorActor] = []

    init(simulation: Scheduler?, baseline: VariantRunner.MemoryBaseline, wallStart: UInt64, runStart: UInt64, model: ManagedObjectModel,
         recorder: RunRecorder, main: SimulatedMainThread, storeURL: URL, stack: WorkbenchStack, control: VariantProgress, workload: Workload,
         ticker: ProgressTicker?, sampler: RunSampler) {
        (self.simulation, self.baseline, self.wallStart, self.runStart, self.model) = (simulation, baseline, wallStart, runStart, model)
        (self.recorder, self.main, self.storeURL, self.stack, self.control) = (recorder, main, storeURL, stack, control)
        (self.workload, self.ticker, self.sampler) = (workload, ticker, sampler)
    }

    var view: ManagedObjectContext { stack.viewContext }

    /// The stack's store is in memory (`store: inMemory`): no file, no -wal, and the oracle reads a copy of it.
    var isInMemoryStore: Bool { sampler.inMemory }

    /// The store files every coordinator of the run adds, in order, each with its configuration (`stack.stores`).
    var storeFiles: [(configuration: String?, url: URL)] { workload.scenario.stack.storeFiles(main: storeURL) }

    /// The store file holding the scenario's entity: the first store whose configuration lists it (Docs/coredata-
    /// behaviour.md §14), the main file without `stack.stores`.
    var entityStoreURL: URL {
        let configurations = workload.scenario.model.entities?.configurations ?? [], entity = workload.scenario.model.entity
        return storeFiles.first { file in
            file.configuration.map { name in configurations.contains { $0.name == name && $0.entities.contains(entity) } } ?? true
        }?.url ?? storeURL
    }

    /// A stack without a view context queues nothing on the main queue; the harness does not either.
    func drainMain() { if stack.topology.hasViewContext { main.drain() } }
}
