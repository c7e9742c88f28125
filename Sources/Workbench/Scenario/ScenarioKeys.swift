import Ambar

/// One key of a scenario object: what it takes, its bounds, and what it means. The loader reads its keys, bounds,
/// members and required keys from ``ScenarioKeys``; `ambar-bench schema` writes the same table as a JSON Schema
/// (Docs/scenarios.md "Editor support").
struct ScenarioKey: Sendable {
    /// What a key's value is. The schema names each form's pattern; reading it (`3s`, `10/s`, `size: all`) is the
    /// loader's.
    indirect enum Kind: Sendable {
        /// An integer within `min...max`.
        case integer(min: Int?, max: Int?)
        /// An unsigned 64-bit integer (a seed).
        case unsigned64
        /// One of a few integers (a frame rate).
        case integerChoice([Int])
        /// A finite number within `min...max`; `exclusiveMin` excludes `min` itself.
        case number(min: Double?, max: Double?, exclusiveMin: Bool = false)
        case string
        case boolean
        /// A positive duration of at most a day: seconds, or `3s`, `500ms`, `2m`.
        case duration
        /// `unlimited`, or from 0.001 to 1000000 per second: `10/s` or `10`.
        case rate
        /// Rows per second from 0 to 1000000: `600` or `600/s`.
        case rowsPerSecond
        /// A limit of a threshold: a number, or a duration compared in milliseconds (`16ms`).
        case limit
        /// One of the members.
        case choice([String])
        /// Any scalar (a matrix value: the key it sets checks it).
        case scalar
        /// A list of the element kind with at least `minItems` elements.
        case list(Kind, minItems: Int = 0)
        /// A mapping of any names to values of the kind.
        case map(Kind)
        /// The object of ``ScenarioKeys`` with this name.
        case object(String)
        /// Any of the kinds.
        case anyOf([Kind])
        /// A Core Data model's entities (Docs/scenarios.md "The model"): checked by the model loader, not the table.
        case entities
        /// A model file's path: `.json`, `.yaml`, `.yml`, `.xcdatamodeld` or `.xcdatamodel` (Docs/scenarios.md "A model
        /// from a file").
        case modelFile
    }

    var name: String
    var kind: Kind
    var required: Bool
    var description: String
    /// Whether an empty value (`editor:` with nothing after it) stands for an empty mapping.
    var nullable: Bool

    init(_ name: String, _ kind: Kind, required: Bool = false, nullable: Bool = false, _ description: String) {
        self.name = name
        self.kind = kind
        self.required = required
        self.description = description
        self.nullable = nullable
    }
}

/// A mapping of a scenario file (the document, the stack, a phase, an actor's settings…) and its keys.
struct ScenarioObject: Sendable {
    var name: String
    var description: String
    var keys: [ScenarioKey]
    /// Whether the mapping holds exactly one of its keys (an actor: `- importer: {…}`).
    var exactlyOneKey: Bool

    init(_ name: String, _ description: String, exactlyOneKey: Bool = false, _ keys: [ScenarioKey]) {
        self.name = name
        self.description = description
        self.keys = keys
        self.exactlyOneKey = exactlyOneKey
    }

    var keyNames: [String] { keys.map(\.name) }
    var requiredNames: [String] { keys.filter(\.required).map(\.name) }

    /// The key named `name`; asking for a key the table lacks is a programmer's mistake.
    subscript(_ name: String) -> ScenarioKey {
        guard let key = keys.first(where: { $0.name == name }) else { preconditionFailure("\(self.name) has no key '\(name)' in ScenarioKeys") }
        return key
    }
}

/// Every key a scenario file may hold, object by object: the one table the loader validates with and
/// `ambar-bench schema` writes (Docs/scenarios.md).
enum ScenarioKeys {
    static func members<T: RawRepresentable & CaseIterable>(_ type: T.Type) -> ScenarioKey.Kind where T.RawValue == String {
        .choice(T.allCases.map(\.rawValue))
    }

    /// The built-in merge policies (a package may register more: ``Registry``).
    static let policy = ScenarioKey.Kind.choice(["error", "storeTrump", "objectTrump", "overwrite", "rollback"])
    static let metric = ScenarioKey.Kind.choice(MetricCatalog.names.sorted())
    static let statistic = ScenarioKey.Kind.choice(MetricCatalog.statistics)
    static let manyRecords = ScenarioKey.Kind.integer(min: 1, max: 100_000_000)
    static let sortList = ScenarioKey.Kind.list(.string)

    static let root = ScenarioObject("scenario", "A scenario file: a workload replayed against a stack (Docs/scenarios.md).", [
        .init("name", .string, required: true, "The scenario's name: letters, digits, '-' and '_' (it names the report folder)."),
        .init("description", .string, "One line for the report."),
        .init("seed", .unsigned64, "The seed of every actor's choices and of the scheduler's tie-breaking (default 1)."),
        .init("mode", members(ExecutionMode.self), "simulated (a virtual clock, the default) or real (threads at wall-clock rates)."),
        .init("profile", .string, "The cost profile of simulated mode: a name in Profiles/ or a .yaml file (default modern-iphone)."),
        .init("model", .anyOf([.choice(["workload"]), .modelFile, .object("model")]), "workload (the shipped model), a model a package registered, a model file, or a mapping with entities or a file."),
        .init("stack", .object("stack"), required: true, "The Core Data stack: topology, merge policies, store."),
        .init("phases", .list(.object("phase"), minItems: 1), required: true, "Phases run in order; seed, run and verify name their kind."),
        .init("thresholds", .list(.object("threshold")), "Limits a run must meet (or, with fails: false, that a sweep reports against)."),
        .init("objective", .list(.anyOf([metric, .object("objectiveCriterion")]), minItems: 1), "What \"best\" means for the report's ranking: criteria compared in order."),
        .init("knee", .object("knee"), "Where a sweep's thresholds are first missed, said in a sentence."),
        .init("matrix", .map(.list(.scalar, minItems: 1)), "Key path → list of values: one variant per combination."),
        .init("repeat", .integer(min: 1, max: 100), "Runs per variant (default 1)."),
    ])

    static let model = ScenarioObject("model", "The Core Data model: the shipped workload, a model file or inline entities.", [
        .init("name", .choice(["workload"]), "workload, or a model a package registered."),
        .init("file", .modelFile, "A model file, relative to the scenario file: .json, .yaml, .xcdatamodeld or .xcdatamodel."),
        .init("version", .string, "The model file's version the store is made with (default: its first)."),
        .init("entities", .entities, "The model file's entities, inline (Docs/scenarios.md \"The model\")."),
        .init("entity", .string, "The entity the actors insert, read and change (default Record)."),
        .init("idKey", .string, "An integer attribute the workbench numbers records by."),
        .init("fields", .list(.string), "Attributes editors change."),
        .init("sortKey", .string, "The attribute the viewer sorts by."),
        .init("values", .map(.anyOf([.object("stringValues"), .object("numberValues")])), "Per attribute: { length } for strings, { min, max } for numbers."),
    ])

    static let stringValues = ScenarioObject("stringValues", "Generated strings of a string attribute.", [
        .init("length", .integer(min: 0, max: 1_000_000), required: true, "The strings' length in characters."),
    ])

    static let numberValues = ScenarioObject("numberValues", "Generated numbers of a number attribute, from min to max.", [
        .init("min", .number(min: nil, max: nil), required: true, "The smallest value."),
        .init("max", .number(min: nil, max: nil), required: true, "The largest value."),
    ])

    static let stack = ScenarioObject("stack", "The Core Data stack the scenario runs against.", [
        .init("topology", members(TopologyKind.self), required: true, "How the contexts and coordinators are arranged."),
        .init("mergePolicy", policy, "Every context's merge policy (default: the topology's policies)."),
        .init("policies", .object("policies"), "Merge policies by context role."),
        .init("singleCoordinator", .boolean, "Ambar 7.x: one coordinator for the reader and the writer."),
        .init("viewStaleness", .number(min: nil, max: nil), "Seconds the view context may lag behind the store."),
        .init("objectTrumpDeletedElsewhere", .choice(["delete", "resurrect"]), "What object-trump does with an object deleted elsewhere (default delete)."),
        .init("connectionPool", .integer(min: 1, max: 64), "Connections per coordinator, NSPersistentStoreConnectionPoolMaxSizeKey (default 4)."),
        .init("mergeRelease", members(AmbarMergeRelease.self), "Ambar topologies: where merged objects are released (default mergingQueue)."),
        .init("merge", members(MergeMode.self), "How the view context learns of background saves (default didSave)."),
        .init("pinViewGeneration", .boolean, "Pin the view context to a query generation before the first phase."),
        .init("store", members(StoreKind.self), "sqlite (a file in WAL mode, the default) or inMemory."),
        .init("stores", .list(.object("storeConfiguration"), minItems: 1), "A model file's configurations, one SQLite store each, every coordinator adding them in order (default: one store of every entity)."),
    ])

    static let storeConfiguration = ScenarioObject("storeConfiguration", "One store of the stack: the model configuration whose entities it holds.", [
        .init("configuration", .string, required: true, "A configuration of the model file."),
    ])

    static let policies = ScenarioObject("policies", "Merge policies by context role; all sets every role, a role beside it wins.",
        ["all", "view", "importer", "editor", "temporary", "writer", "batch"].map { ScenarioKey($0, policy, $0 == "all" ? "Every role's merge policy." : "The \($0) context's merge policy.") })

    static let phase = ScenarioObject("phase", "A phase: its actors run together until they end or its duration passes.", [
        .init("name", .string, required: true, "The phase's name; seed, run and verify are also its kind."),
        .init("kind", .choice(["seed", "run", "verify"]), "seed (fills the store, out of the latency figures), run or verify."),
        .init("duration", .duration, "Caps the phase: 3s, 500ms, 2m, at most a day."),
        .init("actors", .list(.object("actor")), "The actors of the phase, each one of importer, viewer, editor, temporary, writer, batch, migrator, fetcher, deleter."),
    ])

    static let actor = ScenarioObject("actor", "One actor: its kind, then its settings.", exactlyOneKey: true, [
        .init("importer", .object("importer"), nullable: true, "Imports records in chunks on background contexts."),
        .init("viewer", .object("viewer"), nullable: true, "A fetched results controller on the view context, read every frame."),
        .init("editor", .object("editor"), nullable: true, "Edits on a child of the view context, saved."),
        .init("temporary", .object("temporary"), nullable: true, "Edits in a temporary context, discarded or saved."),
        .init("writer", .object("writer"), nullable: true, "A second writer on its own coordinator."),
        .init("batch", .object("batch"), nullable: true, "Batch insert, update or delete requests."),
        .init("migrator", .object("migrator"), nullable: true, "Opens the store with the model's next version (lightweight migration)."),
        .init("fetcher", .object("fetcher"), nullable: true, "Fetch requests an app makes as it runs."),
        .init("deleter", .object("deleter"), nullable: true, "Deletes records as managed objects, in chunks."),
    ])

    static let importer = ScenarioObject("importer", "Imports records in chunks on background contexts.", [
        .init("objects", .integer(min: 0, max: 100_000_000), "Records to import (default 1000)."),
        .init("chunkSize", manyRecords, "Records per chunk (default 500)."),
        .init("updateFraction", .number(min: 0, max: 1), "Fraction of each chunk that updates existing records (default 0)."),
        .init("deleteFraction", .number(min: 0, max: 1), "Fraction of each chunk that deletes existing records (default 0)."),
        .init("distribution", members(Distribution.self), "How updated ids are drawn (default uniform)."),
        .init("parallel", .integer(min: 1, max: 16), "Importers running at once (default 1)."),
        .init("rate", .rate, "Chunks per second (default unlimited)."),
        .init("reset", members(ImportReset.self), "afterChunk (a fresh context per save, the default) or never."),
        .init("saveEvery", manyRecords, "Chunks per save (default 1)."),
        .init("groups", .integer(min: 0, max: 1_000_000), "Objects of the to-one relationship's destination each record links to (default 0)."),
        .init("groupParents", .integer(min: 0, max: 1_000_000), "Objects the groups hang under (default 0)."),
        .init("saveParents", .boolean, "Whether a child context's save is pushed on to the store (default true)."),
    ])

    static let viewer = ScenarioObject("viewer", "A fetched results controller on the view context whose window every frame reads.", [
        .init("visibleObjects", .integer(min: 1, max: 100_000), "Objects on screen (default 20)."),
        .init("readOnly", .boolean, "A view context that never saves (default false)."),
        .init("frameRate", .integerChoice([60, 120]), "Frames per second (default 60)."),
        .init("window", .integer(min: 1, max: 100_000), "Objects every frame reads (default visibleObjects)."),
        .init("frc", members(ControllerEvaluation.self), "coreData (Core Data's controller, the default) or batched."),
        .init("request", .object("request"), "The controller's fetch request."),
        .init("scroll", .rowsPerSecond, "Rows per second the window moves through the results (default 0)."),
        .init("frames", members(ViewerFrames.self), "window (frames read the window, the default) or only (frames alone)."),
        .init("tracksChanges", .boolean, "Whether the controller has a delegate tracking changes (default true)."),
    ])

    static let requestKeys: [ScenarioKey] = [
        .init("predicate", .string, "A predicate format (Docs/predicate-grammar.md)."),
        .init("sort", sortList, "Sort keys, '-' before one for descending."),
        .init("fetchLimit", .integer(min: 0, max: 100_000_000), "At most this many results (0: no limit)."),
        .init("fetchBatchSize", .integer(min: 0, max: 100_000_000), "Rows fetched per batch (0: all at once)."),
    ]

    static let request = ScenarioObject("request", "A viewer's fetch request.",
        Array(requestKeys.prefix(2)) + [ScenarioKey("sectionKey", .string, "The attribute that sections the results.")] + Array(requestKeys.dropFirst(2)))

    static let editor = ScenarioObject("editor", "Edits on a child of the view context, saved.", [
        .init("rate", .rate, "Saves per second (default 5/s)."),
        .init("edits", .integer(min: 1, max: 10_000), "Edits per save (default 1)."),
        .init("saveViewContext", .boolean, "Save the view context after the editor's save (default true)."),
    ])

    static let temporary = ScenarioObject("temporary", "Edits in a temporary context, discarded or saved.", [
        .init("rate", .rate, "Edits per second (default 5/s)."),
        .init("edits", .integer(min: 1, max: 10_000), "Edits per context (default 1)."),
        .init("save", .boolean, "Save instead of discarding (default false)."),
    ])

    static let writer = ScenarioObject("writer", "A second writer on its own coordinator.", [
        .init("rate", .rate, "Saves per second (default 5/s)."),
        .init("edits", .integer(min: 1, max: 10_000), "Edits per save (default 1)."),
        .init("distribution", members(Distribution.self), "How edited ids are drawn (default hotspot)."),
    ])

    static let migrator = ScenarioObject("migrator", "Opens the store with the model's next version, migrated in place.", [
        .init("entities", .entities, "The next version's entities (default: the model file's next version, else the entity gains rating and note)."),
        .init("version", .string, "A version of the scenario's model file to migrate to, instead of entities."),
    ])

    static let fetcher = ScenarioObject("fetcher", "Fetch requests an app makes as it runs.", [
        .init("requests", manyRecords, "Fetch requests to make (default 100)."),
        .init("by", members(ActorSpec.Fetcher.By.self), "key (one record by its idKey, the default) or predicate."),
        .init("distribution", members(Distribution.self), "How the ids of a fetch by key are drawn (default uniform)."),
        .init("context", members(ActorSpec.Fetcher.Context.self), "view (the main queue, the default) or background."),
        .init("rate", .rate, "Requests per second (default 10/s)."),
    ] + requestKeys)

    static let deleter = ScenarioObject("deleter", "Deletes records as managed objects in chunks: objects or fraction, one of them.", [
        .init("objects", manyRecords, "Records to delete."),
        .init("fraction", .number(min: 0, max: 1, exclusiveMin: true), "Fraction of the records stored when it starts, more than 0 and at most 1."),
        .init("chunkSize", .integer(min: 1, max: 1_000_000), "Records per chunk (default 100)."),
        .init("rate", .rate, "Chunks per second (default unlimited)."),
        .init("select", members(ActorSpec.Deleter.Select.self), "keys (ids picked among the records left, the default) or all."),
        .init("saveParents", .boolean, "Whether a child context's save is pushed on to the store (default true)."),
    ])

    static let batch = ScenarioObject("batch", "Batch insert, update or delete requests.", [
        .init("kind", members(ActorSpec.Batch.Kind.self), "insert, update (the default) or delete."),
        .init("rate", .rate, "Requests per second (default 1/s)."),
        .init("size", .anyOf([.integer(min: 1, max: 1_000_000), .choice(["all"])]), "Records per request (default 100); all (with kind: delete) for every record."),
        .init("mergeBy", members(ActorSpec.Batch.MergeBy.self), "How the view context learns of the changes (default ids)."),
        .init("requests", manyRecords, "Requests before the actor ends (default: it runs for the phase's duration)."),
    ])

    static let threshold = ScenarioObject("threshold", "A limit on a metric: max (lower is better) or min, one of them.", [
        .init("metric", metric, required: true, "The metric (Docs/workbench.md \"Metrics\")."),
        .init("statistic", statistic, "The statistic compared (default p99)."),
        .init("polarity", members(Threshold.Polarity.self), "Must fit max (lowerIsBetter) or min (higherIsBetter)."),
        .init("max", .limit, "The largest value that passes; a duration (16ms) for a latency."),
        .init("min", .limit, "The smallest value that passes."),
        .init("fails", .boolean, "false: a sweep reports against the limit and the run does not fail (default true)."),
    ])

    static let objectiveCriterion = ScenarioObject("objectiveCriterion", "One criterion of the ranking.", [
        .init("metric", metric, required: true, "The metric compared."),
        .init("statistic", statistic, "The statistic compared (default: p99 where the metric has it)."),
        .init("label", .string, "The metric's label (such as promised)."),
        .init("polarity", members(Threshold.Polarity.self), "lowerIsBetter (the default) or higherIsBetter."),
    ])

    static let knee = ScenarioObject("knee", "Where a sweep's thresholds are first missed.", [
        .init("key", .string, required: true, "A matrix key whose values are numbers."),
        .init("says", .string, "The sentence's start."),
    ])

    /// Every object, the document first, in the order the schema lists them.
    static let objects: [ScenarioObject] = [
        root, model, stringValues, numberValues, stack, storeConfiguration, policies, phase, actor, importer, viewer, request, editor, temporary,
        writer, migrator, fetcher, deleter, batch, threshold, objectiveCriterion, knee,
    ]

    /// The object named `name`.
    static func object(_ name: String) -> ScenarioObject {
        guard let object = objects.first(where: { $0.name == name }) else { preconditionFailure("no object '\(name)' in ScenarioKeys") }
        return object
    }
}

extension ScenarioKey.Kind {
    /// The bounds of an integer key, or of the integer a key takes among other forms (`size: 100` or `all`).
    var integerRange: (min: Int?, max: Int?)? {
        switch self {
        case .integer(let min, let max): return (min, max)
        case .anyOf(let kinds): return kinds.lazy.compactMap(\.integerRange).first
        default: return nil
        }
    }

    /// The bounds of a number key.
    var numberRange: (min: Double?, max: Double?)? {
        if case .number(let min, let max, _) = self { return (min, max) }
        return nil
    }
}
