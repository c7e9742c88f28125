import Foundation
import Testing
@testable import Workbench

/// Every key is validated before anything runs (workbench.md "Scenario files"): an unknown key, a wrong type or
/// an impossible value names `file:line:column`, the key path and what was expected.
@Suite("Scenario validation (workbench.md: Scenario files)")
struct ScenarioValidationTests {
    /// The message `ScenarioLoader` gives for `yaml`, or "ok".
    func message(_ yaml: String, overrides: [String] = []) -> String {
        loaderMessage(yaml, file: "bad.yaml", overrides: overrides)
    }

    static let valid = """
        name: valid
        stack:
          topology: ambar
        phases:
          - name: seed
            actors:
              - importer: { objects: 100, chunkSize: 50 }
        """

    @Test("a valid document loads")
    func validLoads() throws {
        #expect(message(Self.valid) == "ok")
        let loaded = try ScenarioLoader.load(text: Self.valid, file: "valid.yaml")
        let scenario = try #require(loaded.variants.first)
        #expect(scenario.seed == 1)
        #expect(scenario.stack.topology == .ambar)
        #expect(scenario.phases.map(\.name) == ["seed"])
        #expect(scenario.phases[0].actors == [.importer(.init(objects: 100, chunkSize: 50, updateFraction: 0, distribution: .uniform, parallel: 1, rate: .unlimited))])
    }

    // A stack without a view context has nothing for a viewer to show or an editor to be a child of.
    @Test("A viewer or an editor in a headless scenario is refused at its file:line:column, naming the topology")
    func headlessRefusesViewActors() throws {
        let headless = Self.valid.replacingOccurrences(of: "topology: ambar", with: "topology: headless")
        #expect(message(headless) == "ok")
        let viewer = headless + "\n  - name: run\n    duration: 1s\n    actors:\n      - writer: { rate: 5/s }\n      - viewer: { visibleObjects: 7 }"
        #expect(message(viewer) == "bad.yaml:12:9: phases.run.viewer: the `headless` topology has no view context (nothing to show): remove the viewer or choose a topology with a view context")
        let editor = headless + "\n  - name: run\n    duration: 1s\n    actors:\n      - editor: { rate: 5/s }"
        #expect(message(editor) == "bad.yaml:11:9: phases.run.editor: the `headless` topology has no view context (no context for an editor's child): remove the editor or choose a topology with a view context")
        // Writers, temporaries and batches need no view context.
        #expect(message(headless + "\n  - name: run\n    duration: 1s\n    actors:\n      - writer: {}\n      - temporary: { save: true }\n      - batch: {}") == "ok")
        // Chosen from the command line or a matrix, the place is still the actor's in the file.
        #expect(message(try Fixtures.text("tiny.yaml"), overrides: ["stack.topology=headless"]).hasPrefix("bad.yaml:14:9: phases.run.viewer: the `headless` topology has no view context"))
        #expect(message(try Fixtures.text("tiny.yaml"), overrides: ["matrix.stack.topology=[ambar, headless]"]).hasPrefix("bad.yaml:14:9: phases.run.viewer: "))
        // The other new topologies have a view context.
        #expect(message(try Fixtures.text("tiny.yaml"), overrides: ["matrix.stack.topology=[viewChildren, privateRoot]"]) == "ok")
    }

    @Test("The viewer's request, window and controller option load; a bad one names the file, line and field")
    func viewerRequest() throws {
        let yaml = Self.valid + """

              - name: run
                duration: 1s
                actors:
                  - viewer: { visibleObjects: 5, window: 8, frc: batched, request: { predicate: "value >= 2", sort: [-title, id], sectionKey: value, fetchLimit: 50, fetchBatchSize: 10 } }
            """
        let scenario = try #require(try ScenarioLoader.load(text: yaml, file: "v.yaml").variants.first)
        guard case .viewer(let v) = scenario.phases[1].actors[0] else { Issue.record("not a viewer"); return }
        #expect(v.window == 8 && v.frc == .batched && v.visibleObjects == 5)
        #expect(v.request.predicate == "value >= 2" && v.request.sort == ["-title", "id"] && v.request.sectionKey == "value")
        #expect(v.request.fetchLimit == 50 && v.request.fetchBatchSize == 10)
        // Defaults: every record, batches of 20, a window of the visible objects, Core Data's controller.
        let plain = try #require(try ScenarioLoader.load(text: Self.valid + "\n  - name: run\n    duration: 1s\n    actors:\n      - viewer: { visibleObjects: 7 }", file: "p.yaml").variants.first)
        guard case .viewer(let d) = plain.phases[1].actors[0] else { Issue.record("not a viewer"); return }
        #expect(d.window == 7 && d.frc == .coreData && d.request == ViewerRequest())
        #expect(d.request.fetchLimit == 0 && d.request.fetchBatchSize == 20 && d.request.predicate == nil)
        #expect(message(yaml.replacingOccurrences(of: "value >= 2", with: "nope >= 2")).hasPrefix("bad.yaml:11:85: phases.run.viewer.request.predicate:"))
        #expect(message(yaml.replacingOccurrences(of: "value >= 2", with: "nope >= 2")).contains("'nope' is not a property of Record"))
        #expect(message(yaml.replacingOccurrences(of: "value >= 2", with: "value >=")).contains("not a predicate"))
        #expect(message(yaml.replacingOccurrences(of: "[-title, id]", with: "[-missing]")).contains("'missing' is not an attribute of Record"))
        #expect(message(yaml.replacingOccurrences(of: "frc: batched", with: "frc: smart")).contains("frc"))
        #expect(message(yaml.replacingOccurrences(of: "window: 8", with: "window: 0")).contains("window"))
    }

    @Test("An importer's reset, saveEvery and groups load; a save too big for this machine's memory, a bad reset or groups without a to-one relationship name the file, line and field")
    func importerShapes() throws {
        let yaml = Self.valid.replacingOccurrences(of: "{ objects: 100, chunkSize: 50 }", with: "{ objects: 100, chunkSize: 50, reset: never, saveEvery: 2, groups: 10 }")
        let scenario = try #require(try ScenarioLoader.load(text: yaml, file: "i.yaml").variants.first)
        guard case .importer(let i) = scenario.phases[0].actors[0] else { Issue.record("not an importer"); return }
        #expect(i.reset == .never && i.saveEvery == 2 && i.groups == 10)
        let plain = try #require(try ScenarioLoader.load(text: Self.valid, file: "p.yaml").variants.first)
        guard case .importer(let d) = plain.phases[0].actors[0] else { Issue.record("not an importer"); return }
        #expect(d.reset == .afterChunk && d.saveEvery == 1 && d.groups == 0)
        #expect(message(yaml.replacingOccurrences(of: "reset: never", with: "reset: sometimes")).contains("phases.seed.importer.reset"))
        // A whole import in one save is allowed while it fits in memory; past half of it, a clear error.
        let huge = Self.valid.replacingOccurrences(of: "{ objects: 100, chunkSize: 50 }", with: "{ objects: 100000000, chunkSize: 100000000 }")
        let memory = Double(ProcessInfo.processInfo.physicalMemory)
        if 100_000_000 * 2048.0 > memory / 2 {
            #expect(message(huge).contains("one save would hold 100000000 objects"))
            #expect(message(huge).hasPrefix("bad.yaml:7:"))
        }
        let single = Self.valid.replacingOccurrences(of: "{ objects: 100, chunkSize: 50 }", with: "{ objects: 2000000, chunkSize: 2000000 }")
        #expect(message(single) == "ok")
        let noRelationship = """
            name: g
            model: { entities: [{ name: Thing, attributes: [{ name: id, type: integer64 }, { name: title, type: string }] }], entity: Thing, fields: [title], sortKey: id }
            stack: { topology: ambar }
            phases:
              - name: seed
                actors:
                  - importer: { objects: 10, groups: 2 }
            """
        #expect(message(noRelationship).contains("has no to-one relationship"))
    }

    /// The viewer of a run phase written with `settings` after the valid scenario.
    static func viewer(_ settings: String) throws -> ActorSpec.Viewer {
        let yaml = valid + "\n  - name: run\n    duration: 1s\n    actors:\n      - viewer: \(settings)"
        let scenario = try #require(try ScenarioLoader.load(text: yaml, file: "s.yaml").variants.first)
        guard case .viewer(let v) = scenario.phases[1].actors[0] else { throw ScenarioError(file: "s.yaml", line: nil, column: nil, field: "", message: "not a viewer") }
        return v
    }

    // `viewer.scroll` (rows per second) and `viewer.frames` (window or only) load; a bad value, or
    // a data key beside `frames: only`, names the file, line and field.
    @Test("The viewer's scroll and frames keys load; a bad one names the file, line and field")
    func viewerScrollAndFrames() throws {
        #expect(try Self.viewer("{ window: 10, scroll: 600 }").scroll == 600)
        #expect(try Self.viewer("{ scroll: 12.5/s }").scroll == 12.5)
        let still = try Self.viewer("{ visibleObjects: 7 }")
        #expect(still.scroll == 0 && still.frames == .window)
        #expect(try Self.viewer("{ frames: only, frameRate: 120 }").frames == .only)
        let run = Self.valid + "\n  - name: run\n    duration: 1s\n    actors:\n      - viewer: "
        #expect(message(run + "{ scroll: -5 }") == "bad.yaml:11:27: phases.run.viewer.scroll: rows per second must be from 0 to 1000000, found -5")
        #expect(message(run + "{ scroll: fast }") == "bad.yaml:11:27: phases.run.viewer.scroll: expected rows per second (a number, or N/s), found 'fast'")
        #expect(message(run + "{ frames: none }").hasPrefix("bad.yaml:11:27: phases.run.viewer.frames: expected one of window, only, found 'none'"))
        #expect(message(run + "{ frames: only, window: 5 }") ==
            "bad.yaml:11:41: phases.run.viewer.window: a viewer with 'frames: only' draws frames and reads no data: remove 'window' or set 'frames: window'")
        #expect(message(run + "{ frames: only, scroll: 100 }").hasPrefix("bad.yaml:11:41: phases.run.viewer.scroll: a viewer with 'frames: only'"))
    }

    // Docs/coredata-behaviour.md §5: `viewer.tracksChanges` (default true) loads; false beside `frc` or `frames: only`
    // names the file, line and field.
    @Test("The viewer's tracksChanges key loads (true by default); beside frc or frames: only it names the file, line and field")
    func viewerTracksChanges() throws {
        #expect(try Self.viewer("{ visibleObjects: 7 }").tracksChanges)
        #expect(try !Self.viewer("{ tracksChanges: false }").tracksChanges)
        let run = Self.valid + "\n  - name: run\n    duration: 1s\n    actors:\n      - viewer: "
        #expect(message(run + "{ tracksChanges: false, frc: batched }") ==
            "bad.yaml:11:46: phases.run.viewer.frc: a viewer with 'tracksChanges: false' evaluates no change: remove 'frc' or set 'tracksChanges: true'")
        #expect(message(run + "{ frames: only, tracksChanges: false }").hasPrefix("bad.yaml:11:48: phases.run.viewer.tracksChanges: a viewer with 'frames: only'"))
        #expect(message(run + "{ tracksChanges: maybe }") == "bad.yaml:11:34: phases.run.viewer.tracksChanges: expected true or false, found 'maybe'")
    }

    @Test("an unknown key names its path and suggests the nearest key")
    func unknownKey() {
        #expect(message(Self.valid.replacingOccurrences(of: "name: valid", with: "nmae: valid")) ==
            "bad.yaml:1:1: nmae: unknown key; expected one of name, description, seed, mode, profile, model, stack, phases, thresholds, objective, knee, matrix, repeat (did you mean 'name'?)")
        #expect(message(Self.valid.replacingOccurrences(of: "chunkSize: 50", with: "chunksize: 50")) ==
            "bad.yaml:7:35: phases.seed.importer.chunksize: unknown key; expected one of objects, chunkSize, updateFraction, deleteFraction, distribution, parallel, rate, reset, saveEvery, groups, groupParents, saveParents (did you mean 'chunkSize'?)")
        #expect(message(Self.valid.replacingOccurrences(of: "topology: ambar", with: "topology: ambar\n  mergePolicies: rollback")) ==
            "bad.yaml:4:3: stack.mergePolicies: unknown key; expected one of topology, mergePolicy, policies, singleCoordinator, viewStaleness, objectTrumpDeletedElsewhere, connectionPool, mergeRelease, merge, pinViewGeneration, store, stores (did you mean 'mergePolicy'?)")
        #expect(message(Self.valid.replacingOccurrences(of: "- importer:", with: "- impoter:")) ==
            "bad.yaml:7:9: phases.seed.impoter: unknown actor; expected one of importer, viewer, editor, temporary, writer, batch, migrator, fetcher, deleter (did you mean 'importer'?)")
    }

    // Docs/coredata-behaviour.md §4.1: an index the store could not create is refused where it is written.
    @Test("a model's indexes are checked, each refusal at the index or element it names")
    func modelIndexes() {
        func scenario(_ entity: String) -> String {
            """
            name: indexed
            model:
              entities:
                - name: Thing
                  attributes:
                    - { name: id, type: integer64, indexed: true }
                    - { name: title, type: string }
                  relationships: [{ name: parts, destination: Part, inverse: thing, toMany: true }]
            \(entity)
                - name: Part
                  relationships: [{ name: thing, destination: Thing, inverse: parts }]
              entity: Thing
            stack:
              topology: ambar
            phases:
              - name: seed
                actors:
                  - importer: { objects: 10 }
            """
        }
        #expect(message(scenario("      fetchIndexes: [{ name: byTitle, elements: [title, { property: id, ascending: false }] }]")) == "ok")
        #expect(message(scenario("      fetchIndexes:\n        - { name: byTitle, elements: [title] }\n        - { name: byNothing, elements: [title, nope] }")) ==
            "bad.yaml:11:48: model.entities[0].fetchIndexes[1].elements[1]: model error in Thing, fetch index 'byNothing', element 'nope': 'nope' is not a property of Thing")
        #expect(message(scenario("      fetchIndexes: [{ name: empty, elements: [] }]")) ==
            "bad.yaml:9:22: model.entities[0].fetchIndexes[0]: model error in Thing, fetch index 'empty': a fetch index needs at least one element")
        #expect(message(scenario("      fetchIndexes: [{ name: byTitle, elements: [title] }, { name: BYTITLE, elements: [id] }]")) ==
            "bad.yaml:9:60: model.entities[0].fetchIndexes[1]: model error in Thing, fetch index 'BYTITLE': more than one fetch index named 'BYTITLE' (names are compared case-insensitively, as SQLite's)")
        #expect(message(scenario("      fetchIndexes: [{ name: byParts, elements: [parts] }]")) ==
            "bad.yaml:9:50: model.entities[0].fetchIndexes[0].elements[0]: model error in Thing, fetch index 'byParts', element 'parts': 'parts' is a to-many relationship, which has no column to index")
    }

    @Test("a wrong type says what was expected and what was found")
    func wrongType() {
        #expect(message(Self.valid.replacingOccurrences(of: "objects: 100", with: "objects: many")) ==
            "bad.yaml:7:30: phases.seed.importer.objects: expected an integer, found 'many'")
        #expect(message(Self.valid.replacingOccurrences(of: "objects: 100", with: "objects: [1, 2]")) ==
            "bad.yaml:7:30: phases.seed.importer.objects: expected an integer, found a list")
        #expect(message("name: x\nstack:\n  topology: ambar\nphases:\n  seed: 1\n") ==
            "bad.yaml:5:3: phases: expected a list, found a mapping")
        #expect(message(Self.valid + "\n      - viewer: { readOnly: maybe }") ==
            "bad.yaml:8:29: phases.seed.viewer.readOnly: expected true or false, found 'maybe'")
        #expect(message(Self.valid.replacingOccurrences(of: "topology: ambar", with: "topology: ambar\n  singleCoordinator: {}")) ==
            "bad.yaml:4:22: stack.singleCoordinator: expected true or false, found a mapping")
    }

    @Test("a seed takes the whole unsigned 64-bit range; an integer beyond a key's range says the range, not the type")
    func integerOutOfRange() throws {
        let largest = Self.valid.replacingOccurrences(of: "name: valid", with: "name: valid\nseed: 18446744073709551615")
        #expect(try ScenarioLoader.load(text: largest, file: "valid.yaml").variants.first?.seed == UInt64.max)
        #expect(try ScenarioLoader.load(text: Self.valid, file: "valid.yaml", overrides: ["seed=18446744073709551615"]).variants.first?.seed == UInt64.max)
        #expect(message(largest.replacingOccurrences(of: "18446744073709551615", with: "18446744073709551616")) ==
            "bad.yaml:2:7: seed: out of range (0 to 18446744073709551615), found 18446744073709551616")
        #expect(message(largest.replacingOccurrences(of: "18446744073709551615", with: "-1")) ==
            "bad.yaml:2:7: seed: out of range (0 to 18446744073709551615), found -1")
        #expect(message(Self.valid, overrides: ["seed=18446744073709551616"]) ==
            "bad.yaml (-p seed=18446744073709551616): seed: out of range (0 to 18446744073709551615), found 18446744073709551616")
        #expect(message(largest.replacingOccurrences(of: "18446744073709551615", with: "many")) == "bad.yaml:2:7: seed: expected an integer, found 'many'")
        // Past Int's range the key's own bound is named.
        #expect(message(Self.valid.replacingOccurrences(of: "objects: 100", with: "objects: 99999999999999999999")) ==
            "bad.yaml:7:30: phases.seed.importer.objects: out of range (at most 100000000), found 99999999999999999999")
        #expect(message(Self.valid.replacingOccurrences(of: "objects: 100", with: "objects: -99999999999999999999")) ==
            "bad.yaml:7:30: phases.seed.importer.objects: out of range (at least 0), found -99999999999999999999")
        #expect(message(Self.valid + "\n      - batch: { kind: delete, size: 99999999999999999999 }") ==
            "bad.yaml:8:38: phases.seed.batch.size: out of range (at most 1000000), found 99999999999999999999")
    }

    @Test("a knee names a numeric matrix key and needs a threshold; a wrong one is refused at its line")
    func kneeValidation() throws {
        let sweep = Self.valid + """

            matrix:
              phases.seed.importer.chunkSize: [10, 50]
            thresholds:
              - { metric: mainBusy, max: 16.67ms, fails: false }
            knee: { key: phases.seed.importer.chunkSize, says: "The main queue first misses a frame" }
            """
        let loaded = try ScenarioLoader.load(text: sweep, file: "valid.yaml")
        #expect(loaded.variants.first?.knee == Knee(key: "phases.seed.importer.chunkSize", says: "The main queue first misses a frame"))
        #expect(message(sweep.replacingOccurrences(of: "key: phases.seed.importer.chunkSize", with: "key: phases.seed.importer.objects")) ==
            "bad.yaml:12:14: knee.key: expected a matrix key (phases.seed.importer.chunkSize), found 'phases.seed.importer.objects'")
        #expect(message(sweep.replacingOccurrences(of: "[10, 50]", with: "[10, many]")) ==
            "bad.yaml:9:40: matrix.phases.seed.importer.chunkSize[1]: a knee's key takes numbers, found 'many'")
        #expect(message(sweep.replacingOccurrences(of: "  - { metric: mainBusy, max: 16.67ms, fails: false }", with: "  []").replacingOccurrences(of: "thresholds:\n", with: "thresholds:")) ==
            "bad.yaml:11:7: knee: a knee is where the thresholds are first missed: add a threshold")
        #expect(message(Self.valid + "\nthresholds: [{ metric: mainBusy, max: 1ms }]\nknee: { key: phases.seed.importer.chunkSize }") ==
            "bad.yaml:9:14: knee.key: a knee sweeps a matrix key, and this scenario has no matrix")
    }

    @Test("an impossible value is refused before the run")
    func impossibleValue() {
        #expect(message(Self.valid.replacingOccurrences(of: "chunkSize: 50", with: "chunkSize: 0")) ==
            "bad.yaml:7:46: phases.seed.importer.chunkSize: must be at least 1, found 0")
        #expect(message(Self.valid.replacingOccurrences(of: "chunkSize: 50", with: "chunkSize: 50, updateFraction: 1.5")) ==
            "bad.yaml:7:66: phases.seed.importer.updateFraction: must be at most 1.0, found 1.5")
        #expect(message(Self.valid + "\n      - viewer: { frameRate: 90 }") ==
            "bad.yaml:8:30: phases.seed.viewer.frameRate: expected 60 or 120, found 90")
        #expect(message(Self.valid + "\n      - editor: { rate: -3/s }") ==
            "bad.yaml:8:25: phases.seed.editor.rate: expected unlimited or a rate from 0.001/s to 1000000/s such as 10/s, found '-3/s'")
        #expect(message(Self.valid.replacingOccurrences(of: "name: valid", with: "name: my run")) ==
            "bad.yaml:1:7: name: a name uses letters, digits, '-' and '_' (it names the report folder)")
        #expect(message(Self.valid.replacingOccurrences(of: "topology: ambar", with: "topology: ambar9")) ==
            "bad.yaml:3:13: stack.topology: expected one of ambar, ambar8, ambar7, container, nested, history, viewChildren, privateRoot, headless, found 'ambar9' (did you mean 'ambar'?)")
        #expect(message(Self.valid + "\n  - name: seed") ==
            "bad.yaml:5:3: phases: two phases are named 'seed'")
        #expect(message("name: x\nstack:\n  topology: ambar\nphases:\n  - name: run\n    actors:\n      - viewer: {}\n") ==
            "bad.yaml:5:5: phases.run: a run phase without an importer needs a duration")
    }

    @Test("hostile numbers and modes are refused before the run: a duration past a day, a rate of 1e-300 or 1e300 per second, an unknown mode or profile")
    func hostileNumbers() {
        let run = "name: x\nstack:\n  topology: ambar\nphases:\n  - name: run\n    duration: DUR\n    actors:\n      - editor: { rate: RATE }\n"
        #expect(message(run.replacingOccurrences(of: "DUR", with: "1e300s").replacingOccurrences(of: "RATE", with: "5/s")) ==
            "bad.yaml:6:15: phases.run.duration: expected a positive duration of at most a day (24h = 1440m = 86400s), such as 3s or 500ms, found '1e300s'")
        #expect(message(run.replacingOccurrences(of: "DUR", with: "nan").replacingOccurrences(of: "RATE", with: "5/s")).hasPrefix("bad.yaml:6:15: phases.run.duration: expected a positive duration"))
        #expect(message(run.replacingOccurrences(of: "DUR", with: "2s").replacingOccurrences(of: "RATE", with: "1e-300/s")) ==
            "bad.yaml:8:25: phases.run.editor.rate: expected unlimited or a rate from 0.001/s to 1000000/s such as 10/s, found '1e-300/s'")
        #expect(message(run.replacingOccurrences(of: "DUR", with: "2s").replacingOccurrences(of: "RATE", with: "1e300/s")).hasPrefix("bad.yaml:8:25: phases.run.editor.rate"))
        #expect(message(Self.valid + "\nmode: fast") == "bad.yaml:8:7: mode: expected one of simulated, real, found 'fast'")
        #expect(message(Self.valid + "\nprofile: \"a b\"") == "bad.yaml:8:10: profile: a profile is a name in Profiles/ (letters, digits, '-', '_') or a .yaml file")
    }

    @Test("a misspelt merge policy is refused with the nearest name")
    func misspeltPolicy() {
        // Policies another test registered may follow the built-in names in the list.
        let a = message(Self.valid.replacingOccurrences(of: "topology: ambar", with: "topology: ambar\n  mergePolicy: storeTrmp"))
        #expect(a.hasPrefix("bad.yaml:4:16: stack.mergePolicy: expected a merge policy (error, storeTrump, objectTrump, overwrite, rollback"))
        #expect(a.hasSuffix("found 'storeTrmp' (did you mean 'storeTrump'?)"))
        let b = message(Self.valid.replacingOccurrences(of: "topology: ambar", with: "topology: ambar\n  policies: { editor: ObjectTrump }"))
        #expect(b.hasPrefix("bad.yaml:4:23: stack.policies.editor: expected a merge policy (error, storeTrump, objectTrump, overwrite, rollback"))
        #expect(b.hasSuffix("found 'ObjectTrump' (did you mean 'objectTrump'?)"))
    }

    @Test("broken YAML names the line and column")
    func brokenYAML() {
        #expect(message("name: x\nstack: [topology: ambar\nphases: []\n") ==
            "bad.yaml:3:7: not valid YAML: did not find expected ',' or ']'")
        #expect(message("name: x\n  stack: 1\n") ==
            "bad.yaml:2:8: not valid YAML: mapping values are not allowed in this context")
        #expect(message("") == "bad.yaml:1:1: the file is empty")
        #expect(message("- just\n- a list\n") == "bad.yaml:1:1: a scenario is a mapping of keys (name, stack, phases, …)")
        #expect(message("name: x\nname: y\n") == "bad.yaml:2:1: name: duplicate key")
        #expect(message(Self.valid.replacingOccurrences(of: "topology: ambar", with: "topology: ambar\n  topology: nested")) ==
            "bad.yaml:4:3: topology: duplicate key")
    }

    @Test("a missing file is bad input")
    func missingFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("nowhere.yaml").path
        #expect(throws: ScenarioError.self) { try ScenarioLoader.load(file: path) }
        do {
            _ = try ScenarioLoader.load(file: path)
        } catch let error as ScenarioError {
            #expect(error.description == "\(path): no such file")
            #expect(error.line == nil)
        }
    }

    @Test("a bad override or matrix value names the key path")
    func badOverride() {
        #expect(message(Self.valid, overrides: ["chunkSize"]) == "-p chunkSize: chunkSize: an override is key=value")
        #expect(message(Self.valid, overrides: ["stack.topolgy=ambar"]) ==
            "bad.yaml (-p stack.topolgy=ambar): stack.topolgy: unknown key; expected one of topology, mergePolicy, policies, singleCoordinator, viewStaleness, objectTrumpDeletedElsewhere, connectionPool, mergeRelease, merge, pinViewGeneration, store, stores (did you mean 'topology'?)")
        #expect(message(Self.valid, overrides: ["phases.seed.importer.chunkSize=0"]) ==
            "bad.yaml (-p phases.seed.importer.chunkSize=0): phases.seed.importer.chunkSize: must be at least 1, found 0")
        #expect(message(Self.valid + "\nmatrix:\n  stack.topology: [ambar, nosuch]") ==
            "bad.yaml:9:27: stack.topology: expected one of ambar, ambar8, ambar7, container, nested, history, viewChildren, privateRoot, headless, found 'nosuch'")
        #expect(message(Self.valid, overrides: ["matrix.stack.topology=[ambar, nosuch]"]) ==
            "bad.yaml (-p matrix.stack.topology=[ambar, nosuch]): stack.topology: expected one of ambar, ambar8, ambar7, container, nested, history, viewChildren, privateRoot, headless, found 'nosuch'")
        #expect(message(Self.valid + "\nrepeat: 0") == "bad.yaml:8:9: repeat: must be at least 1, found 0")
    }

    @Test("thresholds name a known metric and statistic")
    func thresholds() {
        #expect(message(Self.valid + "\nthresholds:\n  - { metric: mergeLatencyy, max: 5ms }").hasPrefix(
            "bad.yaml:9:15: thresholds[0].metric: unknown metric 'mergeLatencyy'; expected one of "))
        #expect(message(Self.valid + "\nthresholds:\n  - { metric: mergeLatency, statistic: p98, max: 5ms }") ==
            "bad.yaml:9:40: thresholds[0].statistic: unknown statistic 'p98'; expected one of count, p50, p90, p99, p99.9, max, mean, value, total, peak")
        #expect(message(Self.valid + "\nthresholds:\n  - { metric: mergeLatency, max: 5ms, min: 1ms }") ==
            "bad.yaml:9:5: thresholds[0]: a threshold has either max (lower is better) or min (higher is better)")
    }
}
