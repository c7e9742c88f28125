import Foundation
import Testing
@testable import Workbench

/// One table of keys (ScenarioKeys) is what the loader validates with and what `ambar-bench schema` writes as
/// Docs/scenario.schema.json (Docs/scenarios.md "Editor support"): for every key, what the schema refuses the loader
/// refuses too, every shipped scenario passes both, and the committed schema is the generator's.
@Suite("Scenario keys and their JSON Schema (Docs/scenarios.md: Editor support)")
struct ScenarioSchemaTests {
    static let root = DocsTests.root
    static let validator = SchemaValidator(ScenarioSchema.document())

    /// A scenario holding every object of the table once: each key's bad value is set into it where that object is.
    /// `mode: real` loads no cost profile, and only the migrator's keys load ``withMigrator`` (checking its next
    /// version costs more than the rest of a load), which keeps the few hundred loads fast.
    static let base = """
        name: keys
        mode: real
        model:
          entity: Record
          values: { title: { length: 5 }, value: { min: 0, max: 1 } }
        stack:
          topology: ambar
          policies: { all: error }
        phases:
          - name: seed
            actors:
              - importer: { objects: 10, chunkSize: 10 }
          - name: run
            duration: 1s
            actors:
              - viewer: { request: { fetchBatchSize: 10 } }
              - editor: {}
              - temporary: {}
              - writer: {}
              - batch: {}
              - fetcher: {}
              - deleter: { objects: 5 }
          - name: verify
        thresholds:
          - { metric: hangs, max: 0, fails: false }
        objective: [hangs, { metric: lostUpdates }]
        knee: { key: stack.connectionPool }
        matrix:
          stack.connectionPool: [2, 4]
        """

    /// ``base`` with a migrator, alone in the last phase before verify.
    static let withMigrator = base.replacingOccurrences(of: "  - name: verify", with: "  - name: migrate\n    actors:\n      - migrator: {}\n  - name: verify")

    /// Where each object of the table is in ``base``, as a key path `YAMLTree.setting` follows (the actor, a
    /// mapping of one key, is checked by its own test).
    static let places: [String: [String]] = [
        "scenario": [], "model": ["model"], "stringValues": ["model", "values", "title"], "numberValues": ["model", "values", "value"],
        "stack": ["stack"], "storeConfiguration": ["stack", "stores", "0"], "policies": ["stack", "policies"], "phase": ["phases", "run"],
        "importer": ["phases", "seed", "importer"], "viewer": ["phases", "run", "viewer"], "request": ["phases", "run", "viewer", "request"],
        "editor": ["phases", "run", "editor"], "temporary": ["phases", "run", "temporary"], "writer": ["phases", "run", "writer"],
        "batch": ["phases", "run", "batch"], "fetcher": ["phases", "run", "fetcher"], "deleter": ["phases", "run", "deleter"],
        "migrator": ["phases", "migrate", "migrator"], "threshold": ["thresholds", "0"], "objectiveCriterion": ["objective", "1"],
        "knee": ["knee"],
    ]

    /// What the loader says of `text` ("ok" when it loads) and what the schema says (none when it passes).
    static func verdicts(_ text: String) -> (loader: String, schema: [String]) {
        let loader = loaderMessage(text, file: "keys.yaml")
        let schema: [String]
        do { schema = validator.errors(SchemaValidator.Instance(try YAMLTree.parse(text, file: "keys.yaml"))) } catch { schema = ["not YAML: \(error)"] }
        return (loader, schema)
    }

    /// ``base`` (``withMigrator`` for a migrator's key) with `value` (YAML) set at `path`.
    static func setting(_ path: [String], to value: String) throws -> String {
        let tree = try YAMLTree.parse(path.contains("migrator") ? withMigrator : base, file: "keys.yaml")
        let parsed = try YAMLTree.parse("v: \(value)", file: "value").value(at: "v")!
        return try #require(tree.setting(path, to: parsed)).yaml() + "\n"
    }

    /// A value past the kind's bounds, as YAML, when it has bounds.
    static func outOfRange(_ kind: ScenarioKey.Kind) -> String? {
        switch kind {
        case .integer(let min, let max): return max.map { "\($0 + 1)" } ?? min.map { "\($0 - 1)" }
        case .unsigned64: return "-1"
        case .number(let min, let max, _): return max.map { "\($0 + 1)" } ?? min.map { "\($0 - 1)" }
        case .duration: return "86401"
        case .rate, .rowsPerSecond: return "1000001"
        case .anyOf(let kinds): return kinds.lazy.compactMap(outOfRange).first
        case .list(let element, _): return outOfRange(element).map { "[\($0)]" }
        default: return nil
        }
    }

    /// A value that is no member of the kind's members, as YAML, when it has members.
    static func wrongMember(_ kind: ScenarioKey.Kind) -> String? {
        switch kind {
        case .choice(let members): return "\(members[0])x"
        case .integerChoice(let members): return "\(members[0] + 1)"
        case .anyOf(let kinds): return kinds.lazy.compactMap(wrongMember).first
        case .list(let element, _): return wrongMember(element).map { "[\($0)]" }
        default: return nil
        }
    }

    /// The objects of the table but the actor (a mapping of one key, checked by ``unknownActorKind()``).
    static let objectNames = ScenarioKeys.objects.map(\.name).filter { $0 != "actor" }

    @Test("The scenario that holds every object passes the loader and the schema")
    func baseIsValid() {
        for text in [Self.base, Self.withMigrator] {
            let (loader, schema) = Self.verdicts(text)
            #expect(loader == "ok")
            #expect(schema.isEmpty, "\(schema)")
        }
        #expect(Set(Self.places.keys).union(["actor"]) == Set(ScenarioKeys.objects.map(\.name)))
    }

    @Test("For every key of the table, a mistyped key, an out-of-range value and a wrong member are refused by the loader and the schema",
          arguments: objectNames)
    func everyKeyRefusesMistakes(_ objectName: String) throws {
        let place = try #require(Self.places[objectName])
        for key in ScenarioKeys.object(objectName).keys {
            var cases: [(String, String)] = [("mistyped key \(key.name)x", try Self.setting(place + [key.name + "x"], to: "1"))]
            if let bad = Self.outOfRange(key.kind) { cases.append(("\(key.name): \(bad) (out of range)", try Self.setting(place + [key.name], to: bad))) }
            if let bad = Self.wrongMember(key.kind) { cases.append(("\(key.name): \(bad) (no member)", try Self.setting(place + [key.name], to: bad))) }
            for (what, text) in cases {
                let (loader, schema) = Self.verdicts(text)
                #expect(loader != "ok", "\(objectName).\(what): the loader accepted it")
                #expect(!schema.isEmpty, "\(objectName).\(what): the schema accepted it")
            }
        }
    }

    @Test("The table's ranges and members are tested, not only its names")
    func tableHasRangesAndMembers() {
        let keys = ScenarioKeys.objects.flatMap(\.keys)
        let ranged = keys.filter { Self.outOfRange($0.kind) != nil }.count, listed = keys.filter { Self.wrongMember($0.kind) != nil }.count
        #expect(keys.count >= 100 && ranged >= 30 && listed >= 30, "\(keys.count) keys, \(ranged) with a range, \(listed) with members")
    }

    @Test("An actor of an unknown kind is refused by the loader and the schema")
    func unknownActorKind() {
        for kind in ScenarioKeys.actor.keyNames {
            let text = Self.withMigrator.replacingOccurrences(of: "- \(kind): {", with: "- \(kind)x: {")
            let (loader, schema) = Self.verdicts(text)
            #expect(loader.contains("unknown actor"), "\(kind): \(loader)")
            #expect(!schema.isEmpty, "\(kind)")
        }
    }

    @Test("Every shipped scenario passes the schema")
    func shippedScenariosPass() throws {
        let files = DocsTests.files(under: "Scenarios", suffix: ".yaml")
        #expect(files.count >= 16)
        for file in files {
            let tree = try YAMLTree.parse(try DocsTests.text(file), file: file)
            let errors = Self.validator.errors(SchemaValidator.Instance(tree))
            #expect(errors.isEmpty, "\(file): \(errors)")
        }
    }

    @Test("Docs/scenario.schema.json is what `ambar-bench schema` writes (`make schema` writes it again)")
    func committedSchemaIsCurrent() throws {
        #expect(try DocsTests.text("Docs/scenario.schema.json") == ScenarioSchema.json())
    }

    @Test("`ambar-bench schema` prints the schema, `--out FILE` writes it, and a file it cannot write is bad input (exit 2)")
    func schemaCommand() throws {
        let folder = try TemporaryDirectory()
        let printed = try bench(["schema"], in: folder.url)
        #expect(printed.status == 0 && printed.stdout == ScenarioSchema.json())
        let written = try bench(["schema", "--out", "scenario.schema.json"], in: folder.url)
        #expect(written.status == 0 && written.stdout.isEmpty)
        #expect(try String(contentsOf: folder.file("scenario.schema.json"), encoding: .utf8) == ScenarioSchema.json())
        let refused = try bench(["schema", "--out", "no-such-folder/x.json"], in: folder.url)
        #expect(refused.status == 2 && refused.stderr.contains("cannot write no-such-folder/x.json"), "\(refused.stderr)")
    }

    @Test("Every key of the table is named in Docs/scenarios.md")
    func docsNameEveryKey() throws {
        let page = try DocsTests.text("Docs/scenarios.md")
        // The words of the page's code spans: `fails: false` and `{metric, statistic, label, polarity}` name their keys.
        let named = Set(page.matches(of: /`([^`\n]+)`/).flatMap { $0.output.1.split { !($0.isLetter || $0.isNumber) }.map(String.init) })
        let missing = ScenarioKeys.objects.flatMap { o in o.keyNames.filter { !named.contains($0) }.map { "\(o.name).\($0)" } }
        #expect(missing.isEmpty, "\(missing)")
    }
}
