import Foundation
import Ambar
import ObjectGraph

/// A workload to replay (workbench.md "Scenario files"), after overrides and matrix expansion.
public struct Scenario: Sendable, Codable, Equatable {
    public var name: String
    public var description: String
    public var seed: UInt64
    /// Simulated (one scheduler on a virtual clock, the default) or real (threads and the wall clock).
    public var mode: ExecutionMode
    /// The cost profile of simulated mode: a name in `Profiles/` or a `.yaml` file.
    public var profile: String
    public var model: ModelSpec
    public var stack: StackSpec
    public var phases: [Phase]
    public var thresholds: [Threshold]
    /// What "best" means for this scenario's report: criteria compared in order (`objective:`).
    public var objective: [ObjectiveCriterion] = ObjectiveCriterion.defaultObjective
    /// Where a sweep's thresholds are first missed, said in a sentence (`knee:`); nil: the report says nothing.
    public var knee: Knee? = nil
    /// Parameters this variant was given by `matrix:` (key path → value), for labels.
    public var variantParameters: [String: String]
    /// Which repetition (1-based) this is.
    public var repetition: Int
    public var repetitions: Int

    /// A short label for the variant: its matrix parameters, or "default".
    public var variantName: String {
        variantParameters.isEmpty ? "default" : variantParameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
    }
}

/// The data model of a scenario: the shipped `workload` model, or entities written inline, and which entity
/// and attributes the actors work on.
public struct ModelSpec: Sendable, Codable, Equatable {
    /// A shipped model's name (`workload`), or nil with inline entities.
    public var name: String?
    public var entities: ModelFile?
    /// The entity actors import, view and edit.
    public var entity: String
    /// A unique integer attribute the workbench numbers records by (nil: the entity has none; then imports only
    /// insert, and actors that pick records by number are refused).
    public var idKey: String?
    /// Attributes editors and writers change (strings or numbers).
    public var fields: [String]
    /// Attribute the viewer sorts by.
    public var sortKey: String
    /// How the importer generates values, by attribute: string lengths, number ranges. Attributes
    /// named here are set on every new record, beside `fields`.
    public var values: [String: ValueSpec] = [:]
    /// The model file the model was read from, as the scenario names it (`model: App.json`); nil for the shipped,
    /// a registered or an inline model.
    public var file: String? = nil
    /// A versioned model file's versions, oldest first (a migrator's `version:` names one); empty without versions.
    public var versions: [ModelFile.Version] = []
    /// The version of the model file the store is made with (``entities`` holds its entities).
    public var version: String? = nil
    /// What an Xcode model file has that the library leaves out (fetched properties, fetch request templates…),
    /// each with its file and line: `ambar-bench validate` lists them. Nil when nothing was left out.
    public var skipped: [String]? = nil
    /// How every property of a new record is filled, for a model from a file; nil for the others, whose records get
    /// `fields` and `values` only.
    var seeds: SeedPlan? = nil
}

/// How values of one attribute are generated (workbench `model.values`).
public struct ValueSpec: Sendable, Codable, Equatable {
    /// Strings: this many characters.
    public var length: Int?
    /// Numbers: drawn uniformly from `min...max`.
    public var min: Double?
    public var max: Double?

    public init(length: Int? = nil, min: Double? = nil, max: Double? = nil) {
        self.length = length
        self.min = min
        self.max = max
    }
}

/// How a scenario runs (Docs/simulation.md).
public enum ExecutionMode: String, Sendable, Codable, CaseIterable {
    /// A discrete-event scheduler on a virtual clock: counts and times are exact for a scenario and seed.
    case simulated
    /// Real threads at wall-clock rates: this library's own speed on this machine.
    case real
}

extension Scenario {
    /// The profile simulated runs use unless the scenario or `--profile` names another.
    public static let defaultProfile = "modern-iphone"

    /// Whether an actor leaves its children's saves in their parents (`saveParents: false`).
    var leavesParentsUnsaved: Bool {
        phases.flatMap(\.actors).contains { actor in
            switch actor {
            case .importer(let a): return !a.saveParents
            case .deleter(let d): return !d.saveParents
            default: return false
            }
        }
    }
}

/// The stack topologies (workbench.md): each a small type behind ``Topology``.
public enum TopologyKind: String, Sendable, Codable, CaseIterable {
    case ambar, ambar8, ambar7, container, nested, history
    /// Apple's container with background contexts as children of the view context.
    case viewChildren
    /// A private root saving context, the view context and background contexts its children
    /// (CoreStore's and DATAStack's shape).
    case privateRoot
    /// No view context at all (a command-line import).
    case headless

    /// Whether the stack has a main-queue view context (a viewer or an editor needs one).
    public var hasViewContext: Bool { self != .headless }

    /// The topologies whose background contexts are children: their saves push into a parent, and reach the store
    /// only when the parents save (`saveParents`).
    public static let backgroundContextsAreChildren: [TopologyKind] = [.nested, .viewChildren, .privateRoot]
}

public struct StackSpec: Sendable, Codable, Equatable {
    public var topology: TopologyKind
    /// The view context's merge policy (nil: the topology's default).
    public var mergePolicy: String?
    /// Per-role policies: importer, editor, temporary, writer, batch.
    public var policies: [String: String]
    /// Ambar 7.x: one coordinator instead of two.
    public var singleCoordinator: Bool
    /// The view context's staleness interval (nil: the topology's default).
    public var viewStaleness: Double?
    /// ObjectTrump's rule for rows deleted elsewhere.
    public var objectTrumpDeletedElsewhere: String
    /// Connections per coordinator (semantics §8, `NSPersistentStoreConnectionPoolMaxSizeKey`): reads run on all but
    /// one (read connections of an SQLite store in WAL mode, in both modes; lanes of virtual time in a simulation),
    /// writes serialize; 1 is the serialized coordinator of systems before iOS 10 / macOS 10.12.
    public var connectionPool: Int = PersistentStoreCoordinator.defaultConnectionPoolSize
    /// Ambar topologies: where each smart merge's ID sets are freed (nil: Core Data's place, the merging queue).
    public var mergeRelease: AmbarMergeRelease? = nil
    /// How the view context learns of background saves.
    public var merge: MergeMode = .didSave
    /// Pins the view context to a query generation (semantics §3.7): `setQueryGenerationFrom(.current)`
    /// before the first phase. Its reads keep one snapshot until a merge, save or reset advances it, and SQLite
    /// cannot checkpoint the WAL past it meanwhile (`walSize.peak` shows the cost).
    public var pinViewGeneration: Bool = false
    /// The store every coordinator of the stack opens (`stack.store`): an SQLite file, or rows in memory
    /// (Docs/coredata-behaviour.md §7 "The in-memory store"), which runs no SQL, so a run on it shows the object
    /// graph's work without SQLite's.
    public var store: StoreKind = .sqlite
    /// The model configurations whose stores every coordinator of the run adds, in order (`stack.stores`,
    /// Docs/coredata-behaviour.md §14): one SQLite file each, see ``storeFiles(main:)``. Nil: one store holding
    /// every entity.
    public var stores: [String]? = nil

    /// The store files every coordinator of the run adds, in order, each with its configuration: the main file
    /// alone (no configuration) without `stores`; with them, the first configuration's store in the main file and
    /// each other one in `<main>-<Configuration>.sqlite` beside it.
    public func storeFiles(main: URL) -> [(configuration: String?, url: URL)] {
        guard let stores, !stores.isEmpty else { return [(nil, main)] }
        let directory = main.deletingLastPathComponent(), base = main.deletingPathExtension().lastPathComponent
        return stores.enumerated().map { i, name in
            (name, i == 0 ? main : directory.appendingPathComponent("\(base)-\(name).sqlite"))
        }
    }
}

/// The persistent store a scenario's stack opens (workbench `stack.store`).
public enum StoreKind: String, Sendable, Codable, CaseIterable {
    /// Core Data's `NSSQLiteStoreType`: a file in WAL mode (the default).
    case sqlite
    /// Core Data's `NSInMemoryStoreType`: rows in memory, one store per coordinator, no SQL.
    case inMemory
}

public struct Phase: Sendable, Codable, Equatable {
    public enum Kind: String, Sendable, Codable { case seed, run, verify }
    public var name: String
    public var kind: Kind
    /// Seconds; nil with `operations` or for closed-loop phases that end when their actors are done.
    public var duration: Double?
    public var actors: [ActorSpec]
}

/// How often an actor acts: as fast as it can (closed loop) or at a rate from intended times (open loop).
public enum Rate: Sendable, Codable, Equatable, CustomStringConvertible {
    case unlimited
    case perSecond(Double)
    public var description: String {
        switch self {
        case .unlimited: return "unlimited"
        case .perSecond(let r): return "\(r)/s"
        }
    }
}

public enum Distribution: String, Sendable, Codable, CaseIterable { case uniform, zipfian, hotspot }

public enum ActorSpec: Sendable, Codable, Equatable {
    case importer(Importer)
    case viewer(Viewer)
    case editor(Editor)
    case temporary(Temporary)
    case writer(Writer)
    case batch(Batch)
    case migrator(Migrator)
    case fetcher(Fetcher)
    case deleter(Deleter)

    public var kind: String {
        switch self {
        case .importer: return "importer"
        case .viewer: return "viewer"
        case .editor: return "editor"
        case .temporary: return "temporary"
        case .writer: return "writer"
        case .batch: return "batch"
        case .migrator: return "migrator"
        case .fetcher: return "fetcher"
        case .deleter: return "deleter"
        }
    }

    /// Fetch requests an app makes as it runs (a detail screen's record by its key, a search by a predicate), on the
    /// view context or a background one: each one is a round trip to the store (Docs/coredata-behaviour.md §4).
    public struct Fetcher: Sendable, Codable, Equatable {
        public enum By: String, Sendable, Codable, CaseIterable {
            /// One record by its idKey (`id == n`), the ids drawn by `distribution`.
            case key
            /// The request's predicate, sort, limit and batch size.
            case predicate
        }
        public enum Context: String, Sendable, Codable, CaseIterable {
            /// The main-queue view context: the fetches' time is main-queue time (`mainBusy`, kind `fetch`).
            case view
            /// A private-queue context of the stack (where the topology makes background contexts).
            case background
        }
        /// Fetch requests over the phase (fewer when the phase's duration ends first).
        public var requests: Int
        public var by: By
        /// How `by: key` draws the ids.
        public var distribution: Distribution
        /// `by: predicate`: the predicate, sort, fetchLimit and fetchBatchSize (0: every row at once).
        public var request: ViewerRequest
        public var context: Context
        /// Fetches per second, or back to back.
        public var rate: Rate
    }

    /// Deletes managed objects as apps did before batch deletes: fetch a chunk, `delete(_:)` each object, save,
    /// reset, on a background context; the deletes reach the view context by its merge.
    public struct Deleter: Sendable, Codable, Equatable {
        /// How a chunk finds the records it deletes (workbench `deleter.select`).
        public enum Select: String, Sendable, Codable, CaseIterable {
            /// Ids picked uniformly among the records not yet deleted, fetched with `idKey IN (…)`.
            case keys
            /// One fetch of the entity with no predicate and `fetchLimit` = the chunk's size: the first records the
            /// context sees, its parents' unsaved inserts included (Docs/coredata-behaviour.md §2.2).
            case all
        }
        /// Records to delete, or nil with `fraction`.
        public var objects: Int?
        /// The fraction of the records stored when the deleter starts, or nil with `objects`.
        public var fraction: Double?
        public var chunkSize: Int
        /// Chunks per second, or unlimited.
        public var rate: Rate
        public var select: Select = .keys
        /// Where background contexts are children (nested, viewChildren, privateRoot): false saves the child into
        /// its parent only, and leaves the parents unsaved, so nothing reaches the store.
        public var saveParents = true
    }

    /// Opens the store with the model's next version, which migrates it: alone in the last
    /// phase before `verify`.
    public struct Migrator: Sendable, Codable, Equatable {
        /// The next version's entities (renamed ones carry `renamingIdentifier`).
        public var to: ModelFile
    }

    public struct Importer: Sendable, Codable, Equatable {
        /// Objects per importer over the phase.
        public var objects: Int
        public var chunkSize: Int
        /// Fraction of each chunk that updates existing IDs instead of inserting new ones.
        public var updateFraction: Double
        public var distribution: Distribution
        /// Importers running at once.
        public var parallel: Int
        /// Chunks per second, or unlimited.
        public var rate: Rate
        /// The importing context's lifetime.
        public var reset: ImportReset = .afterChunk
        /// Chunks per save: the context saves after every `saveEvery` chunks and after the last.
        public var saveEvery: Int = 1
        /// Groups each new record is linked to, one of them by its key, through the entity's first to-one
        /// relationship (a record and its group hold each other in a context that keeps them); 0 for none.
        public var groups: Int = 0
        /// Objects the groups hang under in turn, through the group entity's own to-one relationship (the third tier
        /// of the classic 1 → 1,000 → 1,000,000 import); 0 for none.
        public var groupParents: Int = 0
        /// Fraction of each chunk that deletes existing records as managed objects (fetched, `delete(_:)`, saved
        /// with the chunk); `updateFraction + deleteFraction` is at most 1.
        public var deleteFraction: Double = 0
        /// Where background contexts are children (nested, viewChildren, privateRoot): false saves the child into
        /// its parent only, and leaves the parents unsaved, so nothing reaches the store.
        public var saveParents = true
    }
    public struct Viewer: Sendable, Codable, Equatable {
        /// Rows on screen: the default ``window`` and the importers' hot set.
        public var visibleObjects: Int
        public var readOnly: Bool
        public var frameRate: Int
        /// What the viewer's fetched results controller holds (Rule 23).
        public var request: ViewerRequest
        /// Rows a frame reads: the first `window` objects of the controller.
        public var window: Int
        /// How the controller evaluates the changes merged into its context.
        public var frc: ControllerEvaluation
        /// Rows per second the window moves through the controller's results, wrapping to the top at the end;
        /// 0 for a still window.
        public var scroll: Double = 0
        /// What a frame does: read the window, or nothing at all (a main queue that only draws frames).
        public var frames: ViewerFrames = .window
        /// Whether the controller follows the view context's changes (it has a delegate). False: a controller with
        /// no delegate, which keeps the objects of its fetch (Docs/coredata-behaviour.md §5).
        public var tracksChanges = true
    }
    public struct Editor: Sendable, Codable, Equatable {
        public var rate: Rate
        public var edits: Int
        public var saveViewContext: Bool
    }
    public struct Temporary: Sendable, Codable, Equatable {
        public var rate: Rate
        public var edits: Int
        public var save: Bool
    }
    public struct Writer: Sendable, Codable, Equatable {
        public var rate: Rate
        public var edits: Int
        public var distribution: Distribution
    }
    public struct Batch: Sendable, Codable, Equatable {
        public enum Kind: String, Sendable, Codable, CaseIterable { case insert, update, delete }
        public enum MergeBy: String, Sendable, Codable, CaseIterable { case ids, history, none }
        public var kind: Kind
        public var rate: Rate
        /// Records per request (with ``allRecords``, unused).
        public var size: Int
        public var mergeBy: MergeBy
        /// `size: all` (deletes only): a request whose fetch request has no predicate, every record of the entity.
        public var allRecords = false
        /// Requests the actor makes before it ends; nil: as many as the phase's duration holds.
        public var requests: Int? = nil
    }
}

/// A limit on a metric (workbench.md `thresholds:`).
public struct Threshold: Sendable, Codable, Equatable {
    public enum Polarity: String, Sendable, Codable, CaseIterable { case lowerIsBetter, higherIsBetter }
    public var metric: String
    public var statistic: String
    public var polarity: Polarity
    /// Absolute limit (ms for latencies, counts, ratios).
    public var limit: Double
    /// False for a limit a sweep reports against (where a capacity sweep's knee is): missing it is a finding,
    /// not a failure.
    public var fails: Bool = true
}

/// The viewer's fetch request (workbench `viewer.request`): the controller's size follows it, not the window.
public struct ViewerRequest: Sendable, Codable, Equatable {
    /// A predicate in the format grammar (Docs/predicate-grammar.md); nil: every object of the entity.
    public var predicate: String?
    /// Sort keys, `-key` for descending; empty: the model's `sortKey`.
    public var sort: [String] = []
    /// The section name key path, nil for one section.
    public var sectionKey: String?
    /// 0: no limit (an app's usual list).
    public var fetchLimit = 0
    /// Core Data's batched array: rows are read a batch at a time as they are touched (0: all at once).
    public var fetchBatchSize = 20

    public init() {}
}

/// What a viewer's frames do (workbench `viewer.frames`).
public enum ViewerFrames: String, Sendable, Codable, CaseIterable {
    /// Each frame reads every field of the window's objects from the viewer's controller.
    case window
    /// Frames alone: a display-link timer on the main queue with no controller and no data, so a stall of the
    /// main queue shows as missed frames and hitch time even with nothing on screen.
    case only
}

/// How a viewer's controller treats changes merged into its context (workbench `viewer.frc`).
public enum ControllerEvaluation: String, Sendable, Codable, CaseIterable {
    /// Core Data's: each changed object of the entity is evaluated in memory (a merged insert's fault fires); the
    /// results grow past `fetchLimit` (semantics §5 "Cost of change tracking").
    case coreData
    /// Not Core Data: merged faults evaluated in bulk queries and the results trimmed to the limit, to show what
    /// a smarter controller would save.
    case batched
}

/// How long an importer's context lives (workbench `importer.reset`).
public enum ImportReset: String, Sendable, Codable, CaseIterable {
    /// A fresh context for each save, reset after it (Ambar's way, and the default).
    case afterChunk
    /// One context for the actor's whole life, saved after every chunk (or `saveEvery`) and never reset: the
    /// classic import that grows.
    case never
}

/// How the view context learns of background saves (workbench `stack.merge`).
public enum MergeMode: String, Sendable, Codable, CaseIterable {
    /// Each save is merged as it lands (the topology's own way: did-save, Ambar's smart merge, history).
    case didSave
    /// No merge: the view context keeps what it loaded (it goes stale).
    case none
    /// No merge while importing; when an import phase ends, the view's controller fetches again (in batches),
    /// the fix apps adopt for very large imports.
    case notifyAndRefetch
}
