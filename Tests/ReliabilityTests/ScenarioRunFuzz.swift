import Foundation
import Synchronization
import Testing
import Ambar
import ObjectGraph
import SeededRandom
@testable import Workbench

// A fuzz target over scenario files that *runs* each generated scenario that validates, for a
// short bounded time, in-process through the Workbench library: no crash, no hang, and a well-formed result.
// `make fuzz` runs FUZZ_RUNS (10,000) inputs from a fresh seed; `make test` runs a few from the fixed seed.

/// Scenario files to run: mutations of the shipped `Scenarios/*.yaml` (overrides of their own key paths and matrix
/// keys, as `-p` gives them) and random combinations of actors, topologies, policies, models and matrix keys, with
/// hostile values where numbers go (0, negative, huge, inf, nan, 1e300, strings).
struct ScenarioGenerator {
    var rng: SeededGenerator
    /// The shipped scenario files and the key paths an override can set in each.
    let shipped: [(text: String, paths: [String])]

    init(seed: UInt64, shipped texts: [String]) {
        rng = SeededGenerator(seed: seed)
        shipped = texts.map { text in (text, (try? YAMLTree.parse(text, file: "shipped.yaml")).map { Self.leafPaths($0) } ?? []) }
    }

    /// Every scalar's key path as `-p` names it: list items by their `name`, an actor by its kind, else by index.
    static func leafPaths(_ tree: YAMLTree, prefix: String = "") -> [String] {
        func join(_ key: String) -> String { prefix.isEmpty ? key : "\(prefix).\(key)" }
        switch tree {
        case .scalar: return prefix.isEmpty ? [] : [prefix]
        case .map(let pairs, _):
            return pairs.flatMap { leafPaths($0.value, prefix: join($0.key)) }
        case .list(let items, _):
            var paths = [prefix]  // the whole list, to replace with a scalar or another list
            for (i, item) in items.enumerated() {
                if case .map(let pairs, _) = item {
                    if case .scalar(let name, _)? = pairs.first(where: { $0.key == "name" })?.value {
                        paths += leafPaths(item, prefix: join(name))
                        continue
                    }
                    if pairs.count == 1 {
                        paths += leafPaths(pairs[0].value, prefix: join(pairs[0].key))
                        continue
                    }
                }
                paths += leafPaths(item, prefix: join(String(i)))
            }
            return paths
        }
    }

    static let hostile = [
        "0", "-1", "-0", "1e300", "-1e300", "inf", "-inf", ".inf", "nan", "NaN", ".nan", "1e-300", "4.9e-324", "1e11",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551616", "99999999999999999999",
        "abc", "\"\"", "~", "null", "true", "[]", "{}", "[1, 2]", "0x10", "1_000", "1e11s", "1e300s", "infs", "nanms", "-5ms",
        "0s", "86400s", "86401s", "1440m", "1e300/s", "inf/s", "nan/s", "0/s", "0.0001/s", "1000001/s", "1e6/s", "unlimited",
        "🙂", "2.5", "0.5", "1", "100000000", "100000001",
    ]
    static let topologies = TopologyKind.allCases.map(\.rawValue)
    static let policies = ["error", "storeTrump", "objectTrump", "overwrite", "rollback"]
    static let roles = ["all", "view", "importer", "editor", "temporary", "writer", "batch"]
    static let matrixKeys = [
        "stack.topology", "stack.policies.all", "stack.mergePolicy", "stack.merge", "stack.viewStaleness", "stack.connectionPool",
        "phases.run.duration", "phases.run.importer.objects", "phases.run.importer.chunkSize", "phases.run.editor.rate",
        "phases.run.viewer.frc", "phases.seed.importer.objects", "seed", "mode", "stack.singleCoordinator", "no.such.key",
        "stack.pinViewGeneration",
    ]

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
    mutating func pick<T>(_ items: [T]) -> T { items.randomElement(using: &rng)! }

    /// A good value most of the time, a hostile one sometimes.
    mutating func value(_ good: () -> String) -> String { chance(0.04) ? pick(Self.hostile) : good() }
    mutating func number(_ range: ClosedRange<Int>) -> String { let n = int(range); return value { String(n) } }
    mutating func fraction() -> String { let f = Double(int(0...10)) / 10; return value { String(f) } }
    mutating func rate() -> String {
        let r = pick(["unlimited", "\(int(1...400))/s", "\(int(1...50))", "0.5/s", "0.001/s", "1000000/s"])
        return value { r }
    }
    mutating func duration() -> String {
        let d = pick(["\(int(10...300))ms", "\(int(1...2))s", "0.1", "1m", "86400s"])
        return value { d }
    }
    mutating func choice(_ options: [String]) -> String { let o = pick(options); return value { o } }
    mutating func bool() -> String { let b = pick(["true", "false"]); return value { b } }

    /// Some of `pairs`, each kept with probability `keep`, as a flow mapping.
    mutating func flow(_ pairs: [(String, String)], keep: Double = 0.6) -> String {
        var kept = pairs.filter { _ in chance(keep) }
        if chance(0.05) { kept.append((pick(["objectz", "rate", "visible", "size", "🙂"]), pick(Self.hostile))) }
        return "{ " + kept.map { "\($0.0): \($0.1)" }.joined(separator: ", ") + " }"
    }

    mutating func actor(_ kind: String) -> String {
        switch kind {
        case "importer":
            return "importer: " + flow([
                ("objects", number(0...300)), ("chunkSize", number(1...150)), ("updateFraction", fraction()),
                ("distribution", choice(Distribution.allCases.map(\.rawValue))), ("parallel", number(1...3)), ("rate", rate()),
                ("reset", choice(ImportReset.allCases.map(\.rawValue))), ("saveEvery", number(1...3)), ("groups", number(0...5)),
            ] + (chance(0.1) ? [("groupParents", number(0...2))] : []) + (chance(0.1) ? [("saveParents", bool())] : []), keep: 0.4)
        case "viewer":
            var pairs = [
                ("visibleObjects", number(1...30)), ("readOnly", bool()), ("frameRate", choice(["60", "120"])), ("window", number(1...30)),
                ("frc", choice(ControllerEvaluation.allCases.map(\.rawValue))), ("scroll", number(0...200)),
                ("frames", choice(ViewerFrames.allCases.map(\.rawValue))), ("tracksChanges", bool()),
            ]
            if chance(0.3) {
                let predicate = pick(["id > 5", "title BEGINSWITH 'a'", "value < 0.5", "counter == 0 OR id < 3", "nope == 1", "id >"])
                pairs.append(("request", flow([
                    ("predicate", "\"\(predicate)\""), ("sort", pick(["[-id]", "[title, -value]", "[]", "[nope]"])),
                    ("sectionKey", choice(["title", "counter", "nope"])), ("fetchLimit", number(0...40)), ("fetchBatchSize", number(0...40)),
                ], keep: 0.5)))
            }
            return "viewer: " + flow(pairs, keep: 0.4)
        case "editor":
            return "editor: " + flow([("rate", rate()), ("edits", number(1...4)), ("saveViewContext", bool())])
        case "temporary":
            return "temporary: " + flow([("rate", rate()), ("edits", number(1...4)), ("save", bool())])
        case "writer":
            return "writer: " + flow([("rate", rate()), ("edits", number(1...4)), ("distribution", choice(Distribution.allCases.map(\.rawValue)))])
        default:
            return "batch: " + flow([
                ("kind", choice(ActorSpec.Batch.Kind.allCases.map(\.rawValue))), ("rate", rate()), ("size", chance(0.2) ? value { "all" } : number(1...50)),
                ("mergeBy", choice(ActorSpec.Batch.MergeBy.allCases.map(\.rawValue))),
            ] + (chance(0.2) ? [("requests", number(1...5))] : []))
        }
    }

    /// A scenario put together from the format's parts.
    mutating func combination() -> String {
        var lines = ["name: fuzz-\(int(0...999))"]
        if chance(0.5) { lines.append("seed: \(number(0...1_000_000))") }
        if chance(0.1) { lines.append("mode: \(choice(ExecutionMode.allCases.map(\.rawValue)))") }
        if chance(0.05) { lines.append("profile: \(choice(["iphone-15", "no-such-profile", "../etc", "Profiles/iphone-15.yaml"]))") }
        if chance(0.2) {
            let model = pick([
                "model: { fields: [title, value, counter], values: { title: { length: \(number(0...64)) }, value: { min: \(number(-5...0)), max: \(number(0...5)) } } }",
                "model: { fields: [title, updatedAt] }",
                "model: { entities: [{ name: Note, attributes: [{ name: title, type: string }, { name: size, type: double }] }], entity: Note }",
                "model: { entities: [{ name: Item, attributes: [{ name: id, type: integer64 }, { name: label, type: string }] }], entity: Item, sortKey: label }",
                "model: { sortKey: nope }",
                "model: { entity: Group, sortKey: name }",
                // A workload entity below an abstract parent, and the abstract one itself (refused).
                "model: { entities: [{ name: Base, abstract: true, attributes: [{ name: id, type: integer64 }] }, { name: Item, parent: Base, attributes: [{ name: label, type: string }] }], entity: Item, sortKey: label }",
                "model: { entities: [{ name: Base, abstract: true, attributes: [{ name: id, type: integer64 }, { name: label, type: string }] }, { name: Item, parent: Base }], entity: Base, sortKey: label }",
            ])
            lines.append(model)
        }
        lines.append("stack:")
        lines.append("  topology: \(choice(Self.topologies))")
        if chance(0.3) { lines.append("  mergePolicy: \(choice(Self.policies))") }
        if chance(0.4) {
            lines.append("  policies:")
            for role in Self.roles where chance(0.3) { lines.append("    \(role): \(choice(Self.policies))") }
            if lines.last == "  policies:" { lines.append("    all: \(choice(Self.policies))") }
        }
        if chance(0.15) { lines.append("  singleCoordinator: \(bool())") }
        if chance(0.15) { lines.append("  viewStaleness: \(choice(["0", "-1", "2.5", "10"]))") }
        if chance(0.15) { lines.append("  connectionPool: \(number(1...8))") }
        if chance(0.1) { lines.append("  pinViewGeneration: \(bool())") }  // query generations
        if chance(0.15) { lines.append("  merge: \(choice(MergeMode.allCases.map(\.rawValue)))") }
        if chance(0.1) { lines.append("  mergeRelease: \(choice(AmbarMergeRelease.allCases.map(\.rawValue)))") }
        if chance(0.1) { lines.append("  objectTrumpDeletedElsewhere: \(choice(["delete", "resurrect"]))") }
        lines.append("phases:")
        if chance(0.8) {
            lines.append("  - name: seed")
            lines.append("    actors:")
            lines.append("      - \(actor("importer"))")
        }
        for n in 0..<int(1...2) {
            lines.append("  - name: \(n == 0 ? "run" : "run\(n)")")
            if chance(0.7) { lines.append("    duration: \(duration())") }
            lines.append("    actors:")
            for _ in 0..<int(1...4) {
                lines.append("      - \(actor(pick(["importer", "importer", "viewer", "editor", "temporary", "writer", "batch"])))")
            }
        }
        if chance(0.6) { lines.append("  - name: verify") }
        if chance(0.2) {
            lines.append("thresholds:")
            for _ in 0..<int(1...2) {
                let bound = chance(0.5) ? "max" : "min"
                lines.append("  - { metric: \(pick(MetricCatalog.names.sorted())), statistic: \(pick(MetricCatalog.statistics)), \(bound): \(choice(["0", "5", "10ms", "1.5"])) }")
            }
        }
        if chance(0.25) {
            lines.append("matrix:")
            for _ in 0..<int(1...2) {
                let key = pick(Self.matrixKeys)
                let values = (0..<int(1...3)).map { _ in matrixValue(key) }
                lines.append("  \(key): [\(values.joined(separator: ", "))]")
            }
        }
        if chance(0.1) { lines.append("repeat: \(number(1...3))") }
        return lines.joined(separator: "\n") + "\n"
    }

    mutating func matrixValue(_ key: String) -> String {
        switch key {
        case "stack.topology": return choice(Self.topologies)
        case "stack.policies.all", "stack.mergePolicy": return choice(Self.policies)
        case "stack.merge": return choice(MergeMode.allCases.map(\.rawValue))
        case "phases.run.duration": return duration()
        case "phases.run.editor.rate": return rate()
        case "phases.run.viewer.frc": return choice(ControllerEvaluation.allCases.map(\.rawValue))
        case "mode": return choice(ExecutionMode.allCases.map(\.rawValue))
        case "stack.singleCoordinator", "stack.pinViewGeneration": return bool()
        default: return number(0...300)
        }
    }

    /// A shipped scenario with `-p` overrides of its own key paths (written as `# -p key=value` comment lines the
    /// runner reads back, so a printed input replays as it ran).
    mutating func mutation() -> String {
        let file = pick(shipped)
        var overrides: [String] = []
        for _ in 0..<int(0...4) {
            if chance(0.15) {
                let key = pick(Self.matrixKeys)
                overrides.append("matrix.\(key)=[\((0..<int(1...3)).map { _ in matrixValue(key) }.joined(separator: ", "))]")
            } else if let path = file.paths.isEmpty ? nil : pick(file.paths) {
                let leaf = path.split(separator: ".").last.map(String.init) ?? path
                overrides.append("\(path)=\(valueFor(leaf))")
            }
        }
        return overrides.map { "# -p \($0)\n" }.joined() + file.text
    }

    /// A value for a key of this name: of its kind mostly, hostile sometimes.
    mutating func valueFor(_ key: String) -> String {
        switch key {
        case "duration": return duration()
        case "rate": return rate()
        case "topology": return choice(Self.topologies)
        case "mergePolicy", "all", "view", "importer", "editor", "temporary", "writer", "batch": return choice(Self.policies)
        case "objects", "visibleObjects", "window", "size", "chunkSize", "fetchLimit", "fetchBatchSize": return number(0...300)
        case "edits", "parallel", "saveEvery", "groups", "connectionPool", "requests": return number(1...4)
        case "updateFraction", "viewStaleness": return fraction()
        case "pinViewGeneration": return bool()
        case "frc": return choice(ControllerEvaluation.allCases.map(\.rawValue))
        case "distribution": return choice(Distribution.allCases.map(\.rawValue))
        case "reset": return choice(ImportReset.allCases.map(\.rawValue))
        case "kind": return choice(ActorSpec.Batch.Kind.allCases.map(\.rawValue))
        case "mergeBy": return choice(ActorSpec.Batch.MergeBy.allCases.map(\.rawValue))
        case "merge": return choice(MergeMode.allCases.map(\.rawValue))
        case "frames": return choice(ViewerFrames.allCases.map(\.rawValue))
        case "readOnly", "saveViewContext", "save", "singleCoordinator", "tracksChanges", "saveParents": return bool()
        case "select": return choice(ActorSpec.Deleter.Select.allCases.map(\.rawValue))
        case "seed": return number(0...1_000_000)
        default: return chance(0.5) ? pick(Self.hostile) : String(int(0...100))
        }
    }

    mutating func next() -> String {
        let roll = int(0...19)
        switch roll {
        case 0..<9: return mutation()
        case 9..<18: return combination()
        default:
            // A generated file with its text damaged as the other fuzz targets damage theirs.
            var mutator = Mutator(seed: UInt64.random(in: 0...UInt64.max, using: &rng), seeds: [combination()], tokens: FuzzTests.scenarioTokens)
            for _ in 0..<3 { _ = mutator.next() }
            return mutator.next()
        }
    }
}

/// Scales a variant down to a short run (the fuzz's per-run budget): at most 200 objects an importer, 0.2 s of
/// virtual time a timed phase, rates and sizes that fit in it, and simulated mode (real mode, 0.05 s a phase, for
/// one variant in fifty). The validated values are what the fuzz looks for; this only bounds how much work they
/// make, so 10,000 inputs run in minutes. Only the test does this: the runner has no cap.
enum FuzzScale {
    static func bounded(_ scenario: Scenario, real: Bool) -> Scenario {
        var s = scenario
        s.mode = real ? .real : .simulated
        let longest = real ? 0.05 : 0.2
        s.phases = s.phases.map { phase in
            var p = phase
            p.duration = p.duration.map { min($0, longest) }
            p.actors = p.actors.map { bounded($0, timed: p.duration != nil) }
            return p
        }
        for (key, value) in s.model.values { s.model.values[key]?.length = value.length.map { min($0, 64) } }
        return s
    }

    static func rate(_ rate: Rate, atLeast floor: Double = 0) -> Rate {
        guard case .perSecond(let r) = rate else { return rate }
        return .perSecond(min(max(r, floor), 1000))
    }

    static func bounded(_ actor: ActorSpec, timed: Bool) -> ActorSpec {
        switch actor {
        case .importer(var a):
            a.objects = min(a.objects, 200)
            a.parallel = min(a.parallel, 3)
            a.groups = min(a.groups, 20)
            a.groupParents = min(a.groupParents, 5)
            // An untimed phase lasts as long as its importer: at least 50 chunks a second keeps it short.
            a.rate = rate(a.rate, atLeast: timed ? 0 : 50)
            return .importer(a)
        case .viewer(var v):
            v.visibleObjects = min(v.visibleObjects, 30)
            v.window = min(v.window, 30)
            return .viewer(v)
        case .editor(var e):
            e.rate = rate(e.rate)
            e.edits = min(e.edits, 5)
            return .editor(e)
        case .temporary(var t):
            t.rate = rate(t.rate)
            t.edits = min(t.edits, 5)
            return .temporary(t)
        case .writer(var w):
            w.rate = rate(w.rate)
            w.edits = min(w.edits, 5)
            return .writer(w)
        case .batch(var b):
            // A phase without a duration lasts as long as a batch with `requests`: at least 50 a second keeps it short.
            b.rate = rate(b.rate, atLeast: timed || b.requests == nil ? 0 : 50)
            b.size = min(b.size, 50)
            b.requests = b.requests.map { min($0, 5) }
            return .batch(b)
        case .migrator:
            // Copies what the (bounded) importers wrote, once.
            return actor
        case .fetcher(var f):
            f.requests = min(f.requests, 50)
            f.rate = rate(f.rate, atLeast: timed ? 0 : 50)
            return .fetcher(f)
        case .deleter(var d):
            d.objects = d.objects.map { min($0, 100) }
            d.rate = rate(d.rate, atLeast: timed ? 0 : 50)
            return .deleter(d)
        }
    }

    /// What is wrong with a result, if anything: an oracle verdict that says nothing, a number that is not finite,
    /// a count below zero, a threshold missing, or a result that does not survive its own JSON.
    static func problems(in result: VariantResult, scenario: Scenario) -> String? {
        if result.oracle.summary.trimmingCharacters(in: .whitespaces).isEmpty { return "the oracle's verdict \(result.oracle.verdict) has no summary" }
        let oracleCounts = [result.oracle.lostUpdates, result.oracle.promisedLosses, result.oracle.staleReads, result.oracle.duplicates,
                            result.oracle.readOnlySavesReachedStore, result.oracle.storeMismatches, result.oracle.unknown]
        if oracleCounts.contains(where: { $0 < 0 }) { return "a negative oracle count: \(oracleCounts)" }
        if result.oracle.verdict == .unknown, result.oracle.unknown == 0 { return "an UNKNOWN verdict that names nothing unknown" }
        for row in result.metrics + result.host where !row.value.isFinite {
            return "metric \(row.metric).\(row.statistic)\(row.label.isEmpty ? "" : "[\(row.label)]") is \(row.value)"
        }
        if let (name, value) = result.counters.first(where: { $0.value < 0 }) { return "counter \(name) is \(value)" }
        if result.timeseries.contains(where: { !$0.seconds.isFinite || $0.seconds < 0 }) { return "a time sample at a time that is not finite" }
        if result.mergeCurve.contains(where: { $0.contains { !$0.isFinite } }) { return "the merge curve holds a number that is not finite" }
        if result.thresholds.count != scenario.thresholds.count { return "\(result.thresholds.count) threshold outcomes for \(scenario.thresholds.count) thresholds" }
        if result.scenario != scenario.name || result.seed != scenario.seed { return "the result names \(result.scenario) seed \(result.seed)" }
        do {
            let data = try JSONEncoder().encode(result)
            let back = try JSONDecoder().decode(VariantResult.self, from: data)
            if back.metrics.count != result.metrics.count || back.oracle != result.oracle { return "the result's JSON does not read back the same" }
        } catch {
            return "the result cannot be written as JSON: \(error)"
        }
        return nil
    }
}

extension ReliabilitySettings {
    /// Scenario runs: `FUZZ_RUNS` when set (`make fuzz`: 10,000), else a few for `make test`.
    static var scenarioRuns: Int { integer("FUZZ_RUNS", default: 100) }
}

/// FNV-1a of a text: a seed that follows the input, whatever the process (Swift's hashes differ per process).
func stableHash(_ text: String) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in text.utf8 { h = (h ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return h
}

extension FuzzTests {
    /// What the running target did beyond the outcome counts.
    struct RunTally: Sendable {
        var ran = 0
        var real = 0
        var variants = 0
        var refusedAtRun: [String] = []
        var slowest = 0.0
        var slowestInput = ""
        var seconds = 0.0
        var times: [Double] = []
        /// The longest simulated run in virtual seconds.
        var longestVirtual = 0.0
        /// Why inputs were refused (the last key and the message's start), to tune the generator.
        var refusals: [String: Int] = [:]
    }
    final class Tally: Sendable { let state = Mutex(RunTally()) }

    /// Loads an input (a scenario, with `# -p key=value` lines as overrides); one that validates runs one of its
    /// variants, scaled down, in-process, and its result must be well-formed.
    static func runScenario(_ input: String, work: URL, tally: Tally) -> FuzzOutcome {
        let overrides = input.split(separator: "\n").filter { $0.hasPrefix("# -p ") }.map { String($0.dropFirst(5)) }
        let loaded: ScenarioLoader.Loaded
        do { loaded = try ScenarioLoader.load(text: input, file: "fuzz.yaml", overrides: overrides) } catch {
            if let error = error as? ScenarioError {
                tally.state.withLock { $0.refusals["\(error.field.split(separator: ".").last ?? ""): \(error.message.prefix(40))", default: 0] += 1 }
            }
            return clarity(of: error, allowed: [ScenarioError.self])
        }
        guard !loaded.variants.isEmpty else { return .unclear("validated with no variant to run") }
        var pick = SeededGenerator(seed: stableHash(input))
        let variant = loaded.variants.randomElement(using: &pick)!
        let real = Int.random(in: 0..<50, using: &pick) == 0
        let scenario = FuzzScale.bounded(variant, real: real)
        let started = Date()
        let result: VariantResult
        do {
            result = try VariantRunner(scenario: scenario, workDirectory: work).run()
        } catch let error as WorkbenchError where error.kind == .badInput && error.message.count >= 10 {
            // Refused when it ran (a missing cost profile): clear, but reported, as `validate` let it through.
            tally.state.withLock { $0.refusedAtRun.append(error.message) }
            return .rejected
        } catch {
            return .unclear("validated, then the run failed: \(type(of: error)): \(error)")
        }
        let seconds = Date().timeIntervalSince(started)
        tally.state.withLock { t in
            t.ran += 1
            t.real += real ? 1 : 0
            t.variants += loaded.variants.count
            t.seconds += seconds
            t.times.append(seconds)
            if seconds > t.slowest { (t.slowest, t.slowestInput) = (seconds, input) }
            if !real { t.longestVirtual = max(t.longestVirtual, result.value("runTime", "value") ?? 0) }
        }
        // The per-run budget in virtual time: a timed phase is cut to 0.2 s and an untimed one lasts as long as its
        // importers (at most 200 objects at 50 chunks a second or faster), so 10 s a phase is far more than any needs.
        if !real, let virtual = result.value("runTime", "value"), virtual > 10 * Double(scenario.phases.count) {
            return .unclear("ran \(virtual) s of virtual time, past its budget of 10 s a phase")
        }
        if let problem = FuzzScale.problems(in: result, scenario: scenario) { return .unclear("a malformed result: \(problem)") }
        return .accepted
    }

    @Test("Generated scenarios that validate run (scaled down, in-process): no crash, no hang, a well-formed result")
    func scenarioRuns() throws {
        let shipped = Self.scenarioSeeds
        try #require(shipped.count >= 5)
        let work = try TemporaryDirectory("fuzz-run")
        let tally = Tally()
        let runs = ReliabilitySettings.scenarioRuns
        let started = Date()
        // One run is a fraction of a second: 20 s without progress is a hang.
        let figures = fuzz("scenario-run", runs: runs, seed: ReliabilitySettings.fuzzSeed, stall: 20, generator: { seed in
            var generator = ScenarioGenerator(seed: seed, shipped: shipped)
            return { generator.next() }
        }, body: { Self.runScenario($0, work: work.url, tally: tally) })
        let t = tally.state.withLock { $0 }
        print(String(format: "fuzz scenario-run: %d inputs in %.1fs, %d ran (%d in real mode, %.1fs running, slowest %.2fs, longest %.2fs of virtual time), %d refused when run",
                     figures.runs, Date().timeIntervalSince(started), t.ran, t.real, t.seconds, t.slowest, t.longestVirtual, t.refusedAtRun.count))
        let times = t.times.sorted()
        if !times.isEmpty {
            print(String(format: "fuzz scenario-run: a run takes %.0f ms (median), %.0f ms (p90), %.0f ms (p99)",
                         times[times.count / 2] * 1000, times[times.count * 9 / 10] * 1000, times[times.count * 99 / 100] * 1000))
        }
        if t.slowest > 2 || ProcessInfo.processInfo.environment["FUZZ_VERBOSE"] != nil { print("fuzz scenario-run: slowest input:\n\(t.slowestInput)") }
        if ProcessInfo.processInfo.environment["FUZZ_VERBOSE"] != nil {
            for (why, n) in t.refusals.sorted(by: { ($0.value, $1.key) > ($1.value, $0.key) }).prefix(40) { print("  \(n) refused: \(why)") }
        }
        for message in Set(t.refusedAtRun).sorted() { print("fuzz scenario-run: refused when run: \(message)") }
        expectClean(figures, runs: runs)
        // Not vacuous: a good share of the inputs validated and ran.
        #expect(t.ran * 5 >= figures.runs || figures.hang != nil, "only \(t.ran) of \(figures.runs) inputs ran")
    }
}
