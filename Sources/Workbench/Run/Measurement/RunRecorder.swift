import Foundation
import ObjectGraph
import Synchronization

/// Everything measured during one variant's run, recorded from any thread.
public final class RunRecorder: Sendable {
    /// Closed during seed phases: the latency distributions (merges, fetches, saves) describe the measured phases
    /// only, where counters and main-queue time count every phase (workbench.md "Phases").
    let measuredPhase = MeasuredPhase()
    let mergeLatency: LatencyRecorder
    let fetchLatency: LatencyRecorder
    private let saveLatencies = Mutex<[String: LatencyRecorder]>([:])
    private let fetchLatencies = Mutex<[String: LatencyRecorder]>([:])
    struct State {
        var counters: [String: Int] = [:]
        var saveFailures: [String: Int] = [:]
        var conflictOutcomes: [String: Int] = [:]
        var notes: [String] = []
        /// Objects of importer saves that reached the store (``imported(_:nanos:)``).
        var objectsImported = 0
        var importNanos: UInt64 = 0
        /// What saves that failed would have written (``refused(_:)``): never in the store.
        var refusedChanges = 0
    }
    let state = Mutex(State())
    /// Contexts whose save met the store and failed, keeping their changes (``saveCountingFailure(_:role:)``):
    /// what they still hold at the end never reached the store. In the order their saves first failed, so that
    /// their changes are read in the same order every run.
    private let refusedKeepers = Mutex<[ManagedObjectContext]>([])
    /// The write events, on disk in `eventDirectory` (in memory without one).
    let events: EventLog

    init(eventDirectory: URL? = nil) {
        events = EventLog(directory: eventDirectory)
        mergeLatency = LatencyRecorder(recordingIn: measuredPhase)
        fetchLatency = LatencyRecorder(recordingIn: measuredPhase)
    }

    /// Every event, in key order (loads them all: for tests and small runs).
    var allEvents: [WriteEvent] {
        var all: [WriteEvent] = []
        try? events.forEachKey { all += $1 }
        return all
    }

    func saveLatency(_ role: String) -> LatencyRecorder { Self.recorder(role, in: saveLatencies, measuredPhase) }

    /// The distribution of `label` in `table`, made the first time.
    private static func recorder(_ label: String, in table: borrowing Mutex<[String: LatencyRecorder]>, _ phase: MeasuredPhase) -> LatencyRecorder {
        table.withLock { table in
            if let r = table[label] { return r }
            let r = LatencyRecorder(recordingIn: phase)
            table[label] = r
            return r
        }
    }

    var saveLatencyRoles: [(String, LatencyRecorder)] { saveLatencies.withLock { $0.sorted { $0.key < $1.key } } }

    /// Fetches of other actors than the viewer (the fetcher's, by context), under `fetchLatency` with a label.
    func labelledFetchLatency(_ label: String) -> LatencyRecorder { Self.recorder(label, in: fetchLatencies, measuredPhase) }

    var fetchLatencyLabels: [(String, LatencyRecorder)] { fetchLatencies.withLock { $0.sorted { $0.key < $1.key } } }

    func add(_ counter: String, _ n: Int = 1) { state.withLock { $0.counters[counter, default: 0] += n } }
    /// Keeps the largest value seen of `counter`.
    func peak(_ counter: String, _ n: Int) { state.withLock { $0.counters[counter] = max($0.counters[counter] ?? 0, n) } }
    func saveFailed(role: String, code: Int) { state.withLock { $0.saveFailures["\(role):\(code)", default: 0] += 1 } }
    func conflictOutcome(_ label: String, _ n: Int) { if n > 0 { state.withLock { $0.conflictOutcomes[label, default: 0] += n } } }
    func record(_ events: [WriteEvent]) { self.events.append(events) }
    func note(_ text: String) { state.withLock { if $0.notes.count < 50 { $0.notes.append(text) } } }
    /// An importer's save took `nanos`; `n` objects of it reached the store (0 when the save failed).
    func imported(_ n: Int, nanos: UInt64) { state.withLock { $0.objectsImported += n; $0.importNanos += nanos } }

    /// A save of `context` failed and its changes are about to be rolled back (call on its queue, before the
    /// rollback): they count as ``changeCount(of:)`` refused changes.
    func refused(_ context: ManagedObjectContext) {
        let n = Self.changeCount(of: context)
        state.withLock { $0.refusedChanges += n }
    }

    /// A save of `context` failed and its changes stay in it (a parent that an app's next save retries).
    func refusedKeeping(_ context: ManagedObjectContext) {
        refusedKeepers.withLock { keepers in if !keepers.contains(where: { $0 === context }) { keepers.append(context) } }
    }

    /// Refused changes: those rolled back, and what the contexts whose save failed keeping them still hold now (at
    /// the end of the run, nothing saves them any more).
    func refusedChanges() -> Int {
        let keepers = refusedKeepers.withLock { $0 }
        let kept = keepers.reduce(0) { sum, context in sum + context.performAndWait { Self.changeCount(of: context) } }
        return state.withLock { $0.refusedChanges } + kept
    }

    /// What a save of `context` would write, in the unit of `lostUpdates` (Docs/workbench.md): one per property
    /// changed on a stored record, one per record inserted, one per stored record deleted. Call on its queue.
    static func changeCount(of context: ManagedObjectContext) -> Int {
        // `changedValues()` is an operation a trace records: the objects are read in the order of their records,
        // never in the set's (address) order, so that a run's trace stays the same.
        let updated = context.updatedObjects.filter { !$0.isInserted && !$0.isDeleted }
            .sorted { ($0.entity.name, $0.objectID.primaryKey ?? 0) < ($1.entity.name, $1.objectID.primaryKey ?? 0) }
            .reduce(0) { $0 + $1.changedValues().count }
        return context.insertedObjects.count + context.deletedObjects.count { !$0.isInserted } + updated
    }
}

/// One write of one property by a committed save, as the oracle sees it (events.jsonl).
public struct WriteEvent: Sendable, Codable, Equatable {
    public var actor: String
    public var role: String
    public var policy: String
    /// The object's primary key.
    public var key: Int64
    public var field: String
    /// What the actor set ("" when the save did not intend this field).
    public var intended: String?
    /// The committed value after the save (the context's snapshot, which equals the row at `version`).
    public var committed: String
    /// `Z_OPT` after the save.
    public var version: Int64
    /// Uptime (ns) when the save returned; virtual in simulated mode.
    public var time: UInt64
    /// The scheduler's step when the save returned (simulated mode): `ambar-bench replay --until` it.
    public var step: Int? = nil
    /// False when the actor set this field to the value its context already held, so that its
    /// save did not change it (an observation, not a write); nil otherwise (and in events recorded before).
    public var changed: Bool? = nil
    /// True for a delete: the actor's committed save deleted the record (`field` is "", `committed` is
    /// ``deletedValue``); nil otherwise.
    public var deleted: Bool? = nil

    /// What a delete event commits.
    public static let deletedValue = "<deleted>"

    /// Whether this event is a write of the field by its save (decided by the save's changes,
    /// not by comparing values).
    public var isWrite: Bool { intended != nil && changed != false && deleted != true }
}
