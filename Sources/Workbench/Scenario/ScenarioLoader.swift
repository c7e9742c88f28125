import Foundation
import Ambar
import ObjectGraph

/// Reads scenario files: parse, apply `-p key=value` overrides, expand `matrix:` and `repeat:`, validate every
/// key before anything runs (workbench.md "Scenario files").
public enum ScenarioLoader {
    /// A loaded file: its variants and the resolved YAML (after overrides) to write beside the results.
    public struct Loaded: Sendable {
        public var file: String
        public var variants: [Scenario]
        public var resolvedYAML: String
    }

    /// Loads, overrides, expands and validates a scenario file.
    /// - Throws: ``ScenarioError`` naming file, line, column and key path.
    public static func load(file: String, overrides: [String] = []) throws -> Loaded {
        try load(text: try readScenarioText(file), file: file, overrides: overrides)
    }

    /// The largest scenario file read: scenarios are small; a bigger file is refused unread.
    public static let maximumFileBytes = 1 << 20

    /// A scenario file's text (or, as `what` says, another YAML file's: an evidence entry, the evidence plan), or
    /// an error that says what the path is instead (a folder, a device, a missing or unreadable file, binary data, a
    /// file too big to be one).
    static func readScenarioText(_ file: String, what: String = "scenario") throws -> String {
        func refuse(_ message: String) -> ScenarioError { ScenarioError(file: file, field: "", message: message) }
        let one = ("aeiou".contains(what.prefix(1)) ? "an " : "a ") + what
        let attributes: [FileAttributeKey: Any]
        do { attributes = try FileManager.default.attributesOfItem(atPath: (file as NSString).resolvingSymlinksInPath) } catch {
            throw refuse(FileManager.default.fileExists(atPath: file) ? "cannot read the \(what) file (\(error.localizedDescription))" : "no such file")
        }
        switch attributes[.type] as? FileAttributeType {
        case .typeRegular?: break
        case .typeDirectory?:
            let hint = what == "scenario" ? "; `ambar-bench list FOLDER` lists a folder's" : ""
            throw refuse("is a folder, not \(one) file (give a .yaml file\(hint))")
        case .typeSymbolicLink?: throw refuse("is a symbolic link that leads nowhere readable (a loop, or a missing target)")
        default: throw refuse("is not a regular file (a device, a pipe or a socket): give a .yaml file")
        }
        if let size = (attributes[.size] as? NSNumber)?.intValue, size > maximumFileBytes {
            throw refuse("is \(size) bytes: \(one) file is at most \(maximumFileBytes) bytes (1 MiB)")
        }
        guard FileManager.default.isReadableFile(atPath: file), let data = FileManager.default.contents(atPath: file) else {
            throw refuse("cannot be read (permission denied)")
        }
        guard let text = String(data: data, encoding: .utf8), !text.contains("\0") else {
            throw refuse("is not UTF-8 text (a binary file?): \(one) is a YAML text file")
        }
        return text
    }

    public static func load(text: String, file: String, overrides: [String] = []) throws -> Loaded {
        var tree = try YAMLTree.parse(text, file: file)
        guard case .map = tree else {
            throw ScenarioError(file: file, line: tree.position?.line, column: tree.position?.column, field: "", message: "a scenario is a mapping of keys (name, stack, phases, …)")
        }
        for override in overrides {
            guard let eq = override.firstIndex(of: "="), eq != override.startIndex else {
                throw ScenarioError(file: "-p \(override)", field: override, message: "an override is key=value")
            }
            let key = String(override[..<eq]), value = String(override[override.index(after: eq)...])
            // A matrix key is itself a key path: `matrix.stack.topology=[a, b]` sets matrix["stack.topology"].
            // Error messages write list items as `phases[1]`; `-p` accepts that as well as `phases.1`.
            let dotted = key.replacingOccurrences(of: "[", with: ".").replacingOccurrences(of: "]", with: "")
            let path = dotted.hasPrefix("matrix.") ? ["matrix", String(dotted.dropFirst("matrix.".count))] : normalize(dotted).split(separator: ".").map(String.init)
            guard let updated = tree.setting(path, to: parseOverrideValue(value)) else {
                throw ScenarioError(file: "-p \(override)", field: key, message: "no such key path in \(file)")
            }
            tree = updated
        }
        // Validate the base document (after overrides) before expanding.
        let reader = Reader(file: file)
        var variants: [Scenario] = []
        do {
            _ = try reader.scenario(tree.removing("matrix"), parameters: [:], repetition: 1, repetitions: 1)
            try reader.checkKnee(tree)
            let repetitions = try reader.repetitions(tree)
            for (parameters, variantTree) in try reader.expandMatrix(tree) {
                for r in 1...repetitions {
                    variants.append(try reader.scenario(variantTree, parameters: parameters, repetition: r, repetitions: repetitions))
                }
            }
        } catch var error as ScenarioError where error.line == nil {
            // A value from the command line has no place in the file: name the override instead.
            let field = error.field
            // The override the error is about: its key path, or one whose path holds the unknown key.
            let fieldLeaf = field.split(separator: ".").last.map { String($0.prefix { $0 != "[" }) } ?? field
            if let override = overrides.first(where: { o in
                let key = normalize(String(o.prefix { $0 != "=" }))
                return key == field || key == "matrix.\(field)"
            }) ?? overrides.first(where: { o in
                String(o.prefix { $0 != "=" }).replacingOccurrences(of: "[", with: ".").replacingOccurrences(of: "]", with: "").split(separator: ".").contains { String($0) == fieldLeaf }
            }) {
                error.file += " (-p \(override))"
            }
            throw error
        }
        return Loaded(file: file, variants: variants, resolvedYAML: tree.yaml() + "\n")
    }

    /// Whether `s` is written as an integer (an optional sign and digits), whatever its size.
    public static func isIntegerLiteral(_ s: String) -> Bool {
        let body = s.first == "-" || s.first == "+" ? s.dropFirst() : Substring(s)
        return !body.isEmpty && body.allSatisfy { $0.isASCII && $0.isNumber }
    }

    static func normalize(_ key: String) -> String {
        key == "mergePolicy" ? "stack.mergePolicy" : (key == "topology" ? "stack.topology" : key)
    }

    static func parseOverrideValue(_ value: String) -> YAMLTree {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("["), trimmed.hasSuffix("]") {
            let items = trimmed.dropFirst().dropLast().split(separator: ",").map { YAMLTree.scalar($0.trimmingCharacters(in: .whitespaces), nil) }
            return .list(items, nil)
        }
        return .scalar(trimmed, nil)
    }

    /// The shipped `workload` model: Record (unique integer id, title, value, counter, updatedAt, group) and
    /// Group (name, records). `id` is indexed, as apps index the key an import looks records up by (Apple's
    /// guidance: index the attributes fetch predicates use); its uniqueness constraint's index serves the same
    /// lookups (Docs/scenarios.md "The model").
    public static let workloadModel = ModelFile(entities: [
        ModelFile.Entity(
            name: "Record",
            attributes: [
                ModelFile.Attribute(name: "id", type: .integer64, optional: false, defaultValue: .number(0)),
                ModelFile.Attribute(name: "title", type: .string),
                ModelFile.Attribute(name: "value", type: .double, optional: false, defaultValue: .number(0)),
                ModelFile.Attribute(name: "counter", type: .integer64, optional: false, defaultValue: .number(0)),
                ModelFile.Attribute(name: "updatedAt", type: .date),
            ],
            relationships: [ModelFile.Relationship(name: "group", destination: "Group", inverse: "records")],
            uniquenessConstraints: [["id"]]),
        ModelFile.Entity(
            name: "Group",
            attributes: [ModelFile.Attribute(name: "name", type: .string)],
            relationships: [ModelFile.Relationship(name: "records", destination: "Record", inverse: "group", toMany: true)]),
    ])
}

/// Walks a ``YAMLTree`` with the key path and position of every node, so every complaint says where.
struct Reader {
    let file: String

    struct Node {
        let tree: YAMLTree
        let path: String
    }

    func fail(_ node: Node, _ message: String) -> ScenarioError {
        ScenarioError(file: file, line: node.tree.position?.line, column: node.tree.position?.column, field: node.path, message: message)
    }

    func child(_ node: Node, _ key: String) -> Node? {
        guard case .map(let pairs, _) = node.tree, let pair = pairs.first(where: { $0.key == key }) else { return nil }
        return Node(tree: pair.value, path: node.path.isEmpty ? key : "\(node.path).\(key)")
    }

    /// The node's keys, refusing any the table does not list for `object` and requiring its required ones.
    func keys(_ node: Node, _ object: ScenarioObject) throws -> Set<String> {
        try keys(node, allowed: object.keyNames, required: object.requiredNames)
    }

    /// The node's keys, refusing any not in `allowed`.
    func keys(_ node: Node, allowed: [String], required: [String] = []) throws -> Set<String> {
        guard case .map(let pairs, _) = node.tree else { throw fail(node, "expected a mapping with keys \(allowed.joined(separator: ", "))") }
        for pair in pairs where !allowed.contains(pair.key) {
            let suggestion = allowed.min { Self.distance($0, pair.key) < Self.distance($1, pair.key) }.map { " (did you mean '\($0)'?)" } ?? ""
            throw ScenarioError(file: file, line: pair.position?.line, column: pair.position?.column,
                                field: node.path.isEmpty ? pair.key : "\(node.path).\(pair.key)",
                                message: "unknown key; expected one of \(allowed.joined(separator: ", "))\(suggestion)")
        }
        let present = Set(pairs.map(\.key))
        for key in required where !present.contains(key) {
            throw fail(node, "missing required key '\(key)'")
        }
        return present
    }

    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased()), b = Array(b.lowercased())
        var row = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in 1...max(b.count, 1) where !b.isEmpty {
                let old = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = old
            }
        }
        return row[b.count]
    }

    /// " (did you mean 'x'?)" when a misspelling is close to one allowed value (at most 2 edits), else "".
    static func suggestion(_ value: String, _ allowed: [String]) -> String {
        guard let nearest = allowed.min(by: { distance($0, value) < distance($1, value) }), distance(nearest, value) <= 2 else { return "" }
        return " (did you mean '\(nearest)'?)"
    }

    func scalar(_ node: Node, _ expected: String) throws -> String {
        guard case .scalar(let s, _) = node.tree else { throw fail(node, "expected \(expected), found a \(node.tree.kindName)") }
        return s
    }

    func string(_ node: Node) throws -> String { try scalar(node, "a string") }

    func int(_ node: Node, min: Int? = nil, max: Int? = nil) throws -> Int {
        // An integer too large for the key is out of range, not a wrong type: say which bound it passes.
        let v: Int = try integer(node) { "out of range (\($0.hasPrefix("-") ? "at least \(min ?? Int.min)" : "at most \(max ?? Int.max)"))" }
        if let min, v < min { throw fail(node, "must be at least \(min), found \(v)") }
        if let max, v > max { throw fail(node, "must be at most \(max), found \(v)") }
        return v
    }

    /// An integer within the key's range (ScenarioKeys).
    func int(_ node: Node, _ key: ScenarioKey) throws -> Int {
        guard let (min, max) = key.kind.integerRange else { preconditionFailure("'\(key.name)' is not an integer key") }
        return try int(node, min: min, max: max)
    }

    /// A number within the key's range (ScenarioKeys).
    func double(_ node: Node, _ key: ScenarioKey) throws -> Double {
        guard case .number(let min, let max, let exclusiveMin) = key.kind else { preconditionFailure("'\(key.name)' is not a number key") }
        let v = try double(node, min: min, max: max)
        if exclusiveMin, let min, v <= min { throw fail(node, "must be more than \(min), found \(v)") }
        return v
    }

    /// One of the key's members (ScenarioKeys).
    func member(_ node: Node, _ key: ScenarioKey) throws -> String {
        guard case .choice(let members) = key.kind else { preconditionFailure("'\(key.name)' is not a choice") }
        let s = try scalar(node, "one of \(members.joined(separator: ", "))")
        guard members.contains(s) else {
            let listed = members.count > 1 ? members.dropLast().joined(separator: ", ") + " or " + members.last! : members.joined()
            throw fail(node, "expected \(listed), found '\(s)'\(Self.suggestion(s, members))")
        }
        return s
    }

    /// An unsigned 64-bit integer (a seed takes the whole range 0...18446744073709551615).
    func uint64(_ node: Node) throws -> UInt64 {
        try integer(node) { _ in "out of range (0 to \(UInt64.max))" }
    }

    /// The node's integer (underscores allowed); a literal the type cannot hold fails with `outOfRange(digits)`.
    func integer<T: FixedWidthInteger>(_ node: Node, outOfRange: (String) -> String) throws -> T {
        let s = try scalar(node, "an integer")
        let digits = s.replacingOccurrences(of: "_", with: "")
        guard let v = T(digits) else {
            guard ScenarioLoader.isIntegerLiteral(digits) else { throw fail(node, "expected an integer, found '\(s)'") }
            throw fail(node, "\(outOfRange(digits)), found \(s)")
        }
        return v
    }

    func double(_ node: Node, min: Double? = nil, max: Double? = nil) throws -> Double {
        let s = try scalar(node, "a number")
        guard let v = Double(s.replacingOccurrences(of: "_", with: "")), v.isFinite else { throw fail(node, "expected a number, found '\(s)'") }
        if let min, v < min { throw fail(node, "must be at least \(min), found \(v)") }
        if let max, v > max { throw fail(node, "must be at most \(max), found \(v)") }
        return v
    }

    func bool(_ node: Node) throws -> Bool {
        switch try scalar(node, "true or false").lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        case let s: throw fail(node, "expected true or false, found '\(s)'")
        }
    }

    func choice<T: RawRepresentable & CaseIterable>(_ node: Node, _ type: T.Type) throws -> T where T.RawValue == String {
        let s = try scalar(node, "one of \(T.allCases.map(\.rawValue).joined(separator: ", "))")
        guard let v = T(rawValue: s) else {
            throw fail(node, "expected one of \(T.allCases.map(\.rawValue).joined(separator: ", ")), found '\(s)'\(Self.suggestion(s, T.allCases.map(\.rawValue)))")
        }
        return v
    }

    func policy(_ node: Node) throws -> String {
        let s = try scalar(node, "a merge policy")
        guard Registry.isPolicy(s) else {
            let names = Registry.policyNames
            throw fail(node, "expected a merge policy (\(names.joined(separator: ", "))), found '\(s)'\(Self.suggestion(s, names))")
        }
        return s
    }

    /// Seconds from `3s`, `500ms`, `2m` or a plain number of seconds.
    func duration(_ node: Node) throws -> Double {
        let s = try scalar(node, "a duration (e.g. 3s, 500ms)").trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60)]
        var seconds: Double?
        for (suffix, factor) in units where s.hasSuffix(suffix) && seconds == nil {
            if let v = Double(s.dropLast(suffix.count)), v > 0, v.isFinite { seconds = v * factor }
        }
        if seconds == nil, let v = Double(s), v > 0, v.isFinite { seconds = v }
        // At most a day: a phase's deadline is kept in nanoseconds, and a longer run answers nothing a day does not.
        guard let seconds, seconds <= 86_400 else {
            throw fail(node, "expected a positive duration of at most a day (24h = 1440m = 86400s), such as 3s or 500ms, found '\(s)'")
        }
        return seconds
    }

    /// `unlimited`, `5/s` or a plain number per second.
    func rate(_ node: Node) throws -> Rate {
        let s = try scalar(node, "a rate (unlimited or N/s)").trimmingCharacters(in: .whitespaces)
        if s == "unlimited" { return .unlimited }
        let number = s.hasSuffix("/s") ? String(s.dropLast(2)) : s
        guard let v = Double(number), v >= 0.001, v <= 1_000_000 else {
            throw fail(node, "expected unlimited or a rate from 0.001/s to 1000000/s such as 10/s, found '\(s)'")
        }
        return .perSecond(v)
    }

    func list(_ node: Node) throws -> [Node] {
        guard case .list(let items, _) = node.tree else { throw fail(node, "expected a list, found a \(node.tree.kindName)") }
        return items.enumerated().map { Node(tree: $1, path: "\(node.path)[\($0)]") }
    }

    // MARK: Document

    func repetitions(_ tree: YAMLTree) throws -> Int {
        guard let node = child(Node(tree: tree, path: ""), "repeat") else { return 1 }
        return try int(node, ScenarioKeys.root["repeat"])
    }

    func expandMatrix(_ tree: YAMLTree) throws -> [([String: String], YAMLTree)] {
        let root = Node(tree: tree, path: "")
        guard let matrix = child(root, "matrix") else { return [([:], tree.removing("matrix"))] }
        guard case .map(let pairs, _) = matrix.tree, !pairs.isEmpty else { throw fail(matrix, "expected a mapping of key paths to lists of values") }
        // Each value keeps its position, so a bad one is reported at its place in the matrix.
        var combinations: [[(String, String, YAMLTree.Position?)]] = [[]]
        for pair in pairs {
            let node = Node(tree: pair.value, path: "matrix.\(pair.key)")
            let values = try list(node).map { (try scalar($0, "a value"), $0.tree.position) }
            guard !values.isEmpty else { throw fail(node, "a matrix dimension needs at least one value") }
            combinations = combinations.flatMap { combo in values.map { combo + [(pair.key, $0.0, $0.1)] } }
        }
        let base = tree.removing("matrix")
        return try combinations.map { combo in
            var variant = base
            var parameters: [String: String] = [:]
            for (key, value, position) in combo {
                guard let updated = variant.setting(ScenarioLoader.normalize(key).split(separator: ".").map(String.init), to: .scalar(value, position)) else {
                    throw fail(Node(tree: matrix.tree, path: "matrix.\(key)"), "no such key path")
                }
                variant = updated
                parameters[key] = value
            }
            return (parameters, variant)
        }
    }

    func scenario(_ tree: YAMLTree, parameters: [String: String], repetition: Int, repetitions: Int) throws -> Scenario {
        let root = Node(tree: tree, path: "")
        // A published measurement is an evidence entry with its own scenario, not part of a scenario: say where.
        if case .map(let pairs, _) = tree, let pair = pairs.first(where: { $0.key == "published" }) {
            throw ScenarioError(file: file, line: pair.position?.line, column: pair.position?.column, field: "published",
                                message: "unknown key; published measurements live in Profiles/evidence/, one file each, run by `ambar-bench evidence` "
                                    + "(Profiles/README.md \"Evidence\"): move the source, figure and directions there and remove this block")
        }
        _ = try keys(root, ScenarioKeys.root)
        let name = try string(child(root, "name")!)
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw fail(child(root, "name")!, "a name uses letters, digits, '-' and '_' (it names the report folder)")
        }
        let description = try child(root, "description").map(string) ?? ""
        let baseSeed = try child(root, "seed").map(uint64) ?? 1
        let mode = try child(root, "mode").map { try choice($0, ExecutionMode.self) } ?? .simulated
        let profile = try child(root, "profile").map(string) ?? Scenario.defaultProfile
        if let node = child(root, "profile") {
            guard !profile.isEmpty, profile.allSatisfy({ $0.isLetter || $0.isNumber || "-_./".contains($0) }) else {
                throw fail(node, "a profile is a name in Profiles/ (letters, digits, '-', '_') or a .yaml file")
            }
        }
        // A simulated run needs its profile: one that cannot be found or read is bad input here, not at `run` (a
        // fuzz finding: `validate` accepted `profile: no-such-profile`).
        if mode == .simulated {
            do { _ = try CostProfile.load(profile) } catch {
                let message = (error as? WorkbenchError)?.message ?? "\(error)"
                throw fail(child(root, "profile") ?? root, message)
            }
        }
        // Simulated runs are a pure function of the seed: repetition r runs seed + r - 1 (a spread over seeds), where
        // real mode reruns one seed (a spread over this machine's timing).
        let seed = mode == .simulated ? baseSeed &+ UInt64(repetition - 1) : baseSeed
        let model = try modelSpec(child(root, "model"))
        let stack = try stackSpec(child(root, "stack")!)
        let phasesNode = child(root, "phases")!
        let phaseNodes = try list(phasesNode)
        guard !phaseNodes.isEmpty else { throw fail(phasesNode, "a scenario needs at least one phase") }
        var phases: [Phase] = []
        for node in phaseNodes { phases.append(try phase(node, model: model)) }
        if let stores = stack.stores, let stackNode = child(root, "stack"), let node = child(stackNode, "stores") {
            try checkStores(node, stack: stack, stackNode: stackNode, stores: stores, model: model)
            // A migrator opens each store with its configuration in the next version (§14.2).
            for case .migrator(let m) in phases.flatMap(\.actors) {
                let next = (m.to.configurations ?? []).map(\.name)
                if let lacking = stores.first(where: { !next.contains($0) }) {
                    throw fail(node, "the migrator's next version has no configuration '\(lacking)', whose store it migrates (its configurations: \(next.isEmpty ? "none" : next.joined(separator: ", ")))")
                }
            }
        }
        try refuseViewActors(phaseNodes, topology: stack.topology)
        try refuseSQLiteOnlyActors(phaseNodes, store: stack.store)
        try refuseUnsavedParents(phaseNodes, topology: stack.topology)
        // A migrator changes the model under every context: it runs alone, in the last phase.
        for (i, p) in phases.enumerated() where p.actors.contains(where: { if case .migrator = $0 { return true } else { return false } }) {
            let later = phases[(i + 1)...].contains { $0.kind != .verify && !$0.actors.isEmpty }
            if p.actors.count > 1 || later {
                throw fail(Node(tree: phaseNodes[i].tree, path: "phases.\(p.name)"), "a migrator runs alone, in the last phase before verify (it changes the model under every context)")
            }
        }
        let names = phases.map(\.name)
        if let duplicate = names.first(where: { n in names.filter { $0 == n }.count > 1 }) {
            throw fail(phasesNode, "two phases are named '\(duplicate)'")
        }
        let thresholds = try child(root, "thresholds").map { try list($0).map(threshold) } ?? []
        var scenario = Scenario(
            name: name, description: description, seed: seed, mode: mode, profile: profile, model: model, stack: stack, phases: phases,
            thresholds: thresholds, variantParameters: parameters, repetition: repetition, repetitions: repetitions)
        if let node = child(root, "objective") {
            let items = try list(node)
            guard !items.isEmpty else { throw fail(node, "an objective lists at least one metric (or leave it out for the default)") }
            scenario.objective = try items.map(objectiveCriterion)
        }
        if let node = child(root, "knee") { scenario.knee = try knee(node, thresholds: thresholds) }
        return scenario
    }

    /// A model a package registered under `name`: its first entity, fields from its attributes.
    func useRegisteredModel(_ name: String, at node: Node, in spec: inout ModelSpec) throws {
        guard let registered = Registry.model(named: name), let first = registered.entities.first else {
            throw fail(node, "expected a model name (\(Registry.modelNames.joined(separator: ", "))), a model file (.json, .yaml, .xcdatamodeld, .xcdatamodel) or a mapping with entities, found '\(name)'")
        }
        spec.name = name
        spec.entities = registered
        spec.entity = first.name
        spec.fields = []
    }

    /// A model file (`model: App.json`, `model.file`): the version the store is made with (the file's first, or
    /// `version`), and the file's versions for a migrator. A path is relative to the scenario file's folder.
    func useModelFile(_ path: String, at node: Node, version: Node?, in spec: inout ModelSpec) throws {
        let reading: ModelFileReader.Reading
        do { reading = try ModelFileReader.read(ModelFileReader.resolve(path, relativeTo: file)) } catch let failure as ModelFileReader.Failure {
            throw fail(node, "cannot use the model file: \(failure)")
        }
        let loaded = reading.file
        spec.name = nil
        spec.file = path
        spec.skipped = reading.skipped.isEmpty ? nil : reading.skipped
        spec.fields = []
        guard let versions = loaded.versions, !versions.isEmpty else {
            if let version { throw fail(version, "\(path) has no versions: leave version out") }
            spec.entities = loaded
            return
        }
        let name = try version.map(string) ?? versions[0].name
        guard let start = versions.first(where: { $0.name == name }) else {
            throw fail(version ?? node, "no version '\(name)' in \(path) (its versions: \(versions.map(\.name).joined(separator: ", ")))")
        }
        spec.versions = versions
        spec.version = name
        var entities = ModelFile(entities: start.entities)
        entities.configurations = start.configurations
        spec.entities = entities
    }

    /// A model file's one entity the actors can work on without `entity:`: a concrete entity with stored
    /// attributes (an importer has something to fill). None, or several (listed), is refused at `node`.
    func soleEntity(of model: ModelFile, path: String, at node: Node) throws -> String {
        let candidates = model.entities.filter { e in e.abstract != true && model.allAttributes(of: e.name).contains { $0.transient != true } }.map(\.name)
        guard candidates.count == 1 else {
            throw fail(node, candidates.isEmpty
                ? "\(path) has no entity the actors can work on (a concrete entity with stored attributes)"
                : "\(path) has \(candidates.count) entities the actors could work on (\(candidates.joined(separator: ", "))): name one with entity:")
        }
        return candidates[0]
    }

    func modelSpec(_ node: Node?) throws -> ModelSpec {
        var spec = ModelSpec(name: "workload", entities: nil, entity: "Record", idKey: "id", fields: ["title", "value"], sortKey: "id")
        guard let node else { return spec }
        if case .scalar(let s, _) = node.tree {
            if s == "workload" { return spec }
            if ModelFileReader.format(of: s) != nil {
                try useModelFile(s, at: node, version: nil, in: &spec)
            } else {
                // A model a package registered under a name: its first entity, the defaults below.
                try useRegisteredModel(s, at: node, in: &spec)
            }
        } else {
            _ = try keys(node, ScenarioKeys.model)
            if let n = child(node, "name") {
                let s = try string(n)
                if s != "workload" { try useRegisteredModel(s, at: n, in: &spec) }
            }
            if let f = child(node, "file") {
                if let other = child(node, "entities") ?? child(node, "name") {
                    throw fail(other, "a model is a file, inline entities or a name: give one of them")
                }
                let path = try string(f)
                guard ModelFileReader.format(of: path) != nil else {
                    throw fail(f, "expected a model file (.json, .yaml, .xcdatamodeld or .xcdatamodel), found '\(path)'")
                }
                try useModelFile(path, at: f, version: child(node, "version"), in: &spec)
            } else if let v = child(node, "version") {
                throw fail(v, "version names a version of a model file: give the file with file:")
            }
            if let e = child(node, "entities") {
                spec.name = nil
                let json = try jsonObject(e)
                do {
                    let data = try JSONSerialization.data(withJSONObject: ["entities": json])
                    let file = try JSONDecoder().decode(ModelFile.self, from: data)
                    _ = try ManagedObjectModel(file: file)
                    spec.entities = file
                } catch let error as ModelError {
                    throw fail(locate(error, in: e), error.description)
                } catch let error as DecodingError {
                    throw fail(e, "not a model: \(ModelFileDecodingDescription(paths: .keys, namesAttributeTypes: true).describe(error))")
                }
            }
        }
        if let n = child(node, "entity") {
            spec.entity = try string(n)
        } else if let path = spec.file, let model = spec.entities {
            spec.entity = try soleEntity(of: model, path: path, at: child(node, "file") ?? node)
        }
        // The entity and keys must exist in the model.
        let file = spec.entities ?? ScenarioLoader.workloadModel
        guard let entity = file.entities.first(where: { $0.name == spec.entity }) else {
            throw fail(child(node, "entity") ?? node, "no entity named '\(spec.entity)' in \(spec.file ?? "the model")")
        }
        // The workload inserts objects of the entity, so it cannot be abstract; its attributes
        // include those it inherits (the model checked that the parents exist and form no cycle).
        if entity.abstract == true {
            throw fail(child(node, "entity") ?? node, "'\(spec.entity)' is abstract: the workload inserts its objects; name one of its sub-entities")
        }
        let entityAttributes = file.allAttributes(of: spec.entity)
        let attributes = Dictionary(entityAttributes.map { ($0.name, $0.type) }, uniquingKeysWith: { a, _ in a })
        let integers: Set<AttributeType> = [.integer16, .integer32, .integer64]
        // An entity need not have an integer id. Without `idKey`, `id` is used when it is an
        // integer attribute; otherwise the records have no number.
        if let n = child(node, "idKey") {
            let key = try string(n)
            guard let type = attributes[key], integers.contains(type) else {
                throw fail(n, "'\(key)' must be an integer attribute of \(spec.entity)")
            }
            spec.idKey = key
        } else {
            spec.idKey = attributes["id"].map(integers.contains) == true ? "id" : nil
        }
        if let n = child(node, "fields") {
            spec.fields = try list(n).map(string)
        } else if spec.file != nil, let model = spec.entities {
            // A model file's entity: its stored string and number attributes, its id and the constrained ones aside
            // (an edit draws values, which a constraint would find twice).
            let constrained = SeedPlan.constrained(spec.entity, in: model)
            spec.fields = entityAttributes.filter {
                $0.name != spec.idKey && $0.transient != true && !constrained.contains($0.name)
                    && [.string, .double, .float, .integer16, .integer32, .integer64].contains($0.type)
            }.map(\.name)
        } else if spec.entities != nil {
            // An inline or registered entity: editors change its string and number attributes (its id aside).
            spec.fields = entityAttributes.filter { $0.name != spec.idKey && [.string, .double, .float, .integer16, .integer32, .integer64].contains($0.type) }.map(\.name)
        }
        if let n = child(node, "sortKey") {
            spec.sortKey = try string(n)
        } else if let idKey = spec.idKey {
            spec.sortKey = idKey
        } else {
            spec.sortKey = spec.fields.first ?? (entityAttributes.first?.name ?? "")
        }
        for f in spec.fields where attributes[f] == nil {
            throw fail(child(node, "fields") ?? node, "'\(f)' is not an attribute of \(spec.entity)")
        }
        if attributes[spec.sortKey] == nil {
            throw fail(child(node, "sortKey") ?? node, "'\(spec.sortKey)' is not an attribute of \(spec.entity) (the viewer sorts by it)")
        }
        if let n = child(node, "values") { spec.values = try valueSpecs(n, attributes: attributes, entity: spec.entity) }
        if let path = spec.file, let model = spec.entities {
            // Every property of a new record is filled (Docs/scenarios.md "A model from a file"): refused here when
            // the model holds what the workbench cannot seed.
            do { spec.seeds = try SeedPlan(file: model, entity: spec.entity, givenValues: Set(spec.values.keys)) } catch let refusal as SeedPlan.Refusal {
                throw fail(child(node, "entity") ?? child(node, "file") ?? node, "\(path): \(refusal)")
            }
        }
        return spec
    }

    /// A model's `values`: per attribute, `{ length }` for a string, `{ min, max }` for a number.
    func valueSpecs(_ n: Node, attributes: [String: AttributeType], entity: String) throws -> [String: ValueSpec] {
        var values: [String: ValueSpec] = [:]
        guard case .map(let pairs, _) = n.tree else { throw fail(n, "expected a mapping of attribute names to { length } or { min, max }") }
        for pair in pairs {
            let item = Node(tree: pair.value, path: "\(n.path).\(pair.key)")
            guard let type = attributes[pair.key] else { throw fail(item, "'\(pair.key)' is not an attribute of \(entity)") }
            var value = ValueSpec()
            switch type {
            case .string:
                _ = try keys(item, ScenarioKeys.stringValues)
                value.length = try int(child(item, "length")!, ScenarioKeys.stringValues["length"])
            case .double, .float, .decimal, .integer16, .integer32, .integer64:
                _ = try keys(item, ScenarioKeys.numberValues)
                let lo = try double(child(item, "min")!), hi = try double(child(item, "max")!)
                guard lo.isFinite, hi.isFinite, lo <= hi else { throw fail(item, "expected finite min <= max, found \(lo)...\(hi)") }
                let limit: Double? = type == .integer16 ? Double(Int16.max) : type == .integer32 ? Double(Int32.max) : type == .integer64 ? 9e15 : nil
                if let limit, lo < -limit || hi > limit { throw fail(item, "\(pair.key) is \(type): the range must lie within ±\(Int64(limit))") }
                value.min = lo
                value.max = hi
            default:
                throw fail(item, "values can be given for string and number attributes; \(pair.key) is \(type)")
            }
            values[pair.key] = value
        }
        return values
    }

    /// What one imported object costs in memory until its save is done, for bounding a save by this machine.
    static let bytesPerImportedObject = 2048.0

    /// A viewer's `scroll`: rows per second, as `600` or `600/s`.
    func scrollRate(_ node: Node) throws -> Double {
        let s = try scalar(node, "rows per second")
        let number = s.hasSuffix("/s") ? String(s.dropLast(2)).trimmingCharacters(in: .whitespaces) : s
        guard let v = Double(number.replacingOccurrences(of: "_", with: "")), v.isFinite else {
            throw fail(node, "expected rows per second (a number, or N/s), found '\(s)'")
        }
        guard v >= 0, v <= 1_000_000 else { throw fail(node, "rows per second must be from 0 to 1000000, found \(s)") }
        return v
    }

    /// A fetcher's settings: `requests`, `by: key` (with `distribution`) or `by: predicate` (with `predicate` and
    /// optional `sort`, `fetchLimit`, `fetchBatchSize`), `context` and `rate`.
    func fetcher(_ settings: Node, model: ModelSpec, needsID: (String) throws -> Void) throws -> ActorSpec.Fetcher {
        let requestKeys = ScenarioKeys.requestKeys.map(\.name)
        _ = try keys(settings, ScenarioKeys.fetcher)
        let by = try child(settings, "by").map { try choice($0, ActorSpec.Fetcher.By.self) } ?? .key
        var request = ViewerRequest()
        request.fetchBatchSize = 0  // an ordinary fetch: every row at once
        switch by {
        case .key:
            if let key = requestKeys.first(where: { child(settings, $0) != nil }) {
                throw fail(child(settings, key)!, "a fetch by key reads one record by its \(model.idKey ?? "idKey"): remove '\(key)' or set 'by: predicate'")
            }
            if model.idKey == nil {
                throw fail(child(settings, "by") ?? settings, "a fetch by key picks records by their integer id, and \(model.entity) has none (give the model an idKey, or fetch 'by: predicate')")
            }
        case .predicate:
            guard child(settings, "predicate") != nil else { throw fail(child(settings, "by")!, "a fetch by predicate needs 'predicate' (Docs/predicate-grammar.md)") }
            if let n = child(settings, "distribution") { throw fail(n, "'distribution' draws the ids of a fetch by key: remove it or set 'by: key'") }
            request = try viewerRequest(settings, model: model, checksKeys: false)
            if child(settings, "fetchBatchSize") == nil { request.fetchBatchSize = 0 }
        }
        return .init(requests: try child(settings, "requests").map { try int($0, ScenarioKeys.fetcher["requests"]) } ?? 100, by: by,
                     distribution: try child(settings, "distribution").map { try choice($0, Distribution.self) } ?? .uniform,
                     request: request, context: try child(settings, "context").map { try choice($0, ActorSpec.Fetcher.Context.self) } ?? .view,
                     rate: try child(settings, "rate").map(rate) ?? .perSecond(10))
    }

    func viewerRequest(_ node: Node, model: ModelSpec, checksKeys: Bool = true) throws -> ViewerRequest {
        if checksKeys { _ = try keys(node, ScenarioKeys.request) }
        let file = model.entities ?? ScenarioLoader.workloadModel
        let attributes = Set(file.allAttributes(of: model.entity).map(\.name))  // inherited ones too
        let properties = attributes.union(file.allRelationships(of: model.entity).map(\.name))
        var request = ViewerRequest()
        if let n = child(node, "predicate") {
            let format = try string(n)
            let predicate: ObjectPredicate
            do { predicate = try ObjectPredicate(format: format) } catch { throw fail(n, "not a predicate: \(error)") }
            for key in predicate.keyPaths where !properties.contains(String(key.split(separator: ".")[0])) {
                throw fail(n, "'\(key)' is not a property of \(model.entity)")
            }
            request.predicate = format
        }
        if let n = child(node, "sort") {
            let items = try list(n)
            request.sort = try items.map { item in
                let text = try string(item)
                let key = text.hasPrefix("-") ? String(text.dropFirst()) : text
                guard attributes.contains(key) else { throw fail(item, "'\(key)' is not an attribute of \(model.entity) (a sort key is an attribute, '-' before it for descending)") }
                return text
            }
        }
        if let n = child(node, "sectionKey") {
            let key = try string(n)
            guard attributes.contains(key) else { throw fail(n, "'\(key)' is not an attribute of \(model.entity)") }
            request.sectionKey = key
        }
        if let n = child(node, "fetchLimit") { request.fetchLimit = try int(n, ScenarioKeys.request["fetchLimit"]) }
        if let n = child(node, "fetchBatchSize") { request.fetchBatchSize = try int(n, ScenarioKeys.request["fetchBatchSize"]) }
        return request
    }

    func jsonObject(_ node: Node) throws -> Any {
        switch node.tree {
        case .scalar(let s, _):
            if s == "true" { return true }
            if s == "false" { return false }
            if let d = Double(s), !s.isEmpty, s.first!.isNumber || s.first == "-" { return d }
            return s
        case .list:
            return try list(node).map(jsonObject)
        case .map(let pairs, _):
            var d: [String: Any] = [:]
            for pair in pairs { d[pair.key] = try jsonObject(Node(tree: pair.value, path: "\(node.path).\(pair.key)")) }
            return d
        }
    }

    func stackSpec(_ node: Node) throws -> StackSpec {
        let keys = ScenarioKeys.stack
        _ = try self.keys(node, keys)
        var spec = StackSpec(topology: try choice(child(node, "topology")!, TopologyKind.self), mergePolicy: nil, policies: [:],
                             singleCoordinator: false, viewStaleness: nil, objectTrumpDeletedElsewhere: "delete",
                             connectionPool: PersistentStoreCoordinator.defaultConnectionPoolSize)
        if let n = child(node, "mergePolicy") { spec.mergePolicy = try policy(n) }
        if let n = child(node, "policies") {
            let present = try self.keys(n, ScenarioKeys.policies)
            // `all` sets every role; a role named beside it wins.
            if present.contains("all") {
                let every = try policy(child(n, "all")!)
                for role in ScenarioKeys.policies.keyNames where role != "all" { spec.policies[role] = every }
            }
            for key in present.sorted() where key != "all" { spec.policies[key] = try policy(child(n, key)!) }
        }
        if let n = child(node, "singleCoordinator") { spec.singleCoordinator = try bool(n) }
        if let n = child(node, "viewStaleness") { spec.viewStaleness = try double(n) }
        if let n = child(node, "connectionPool") { spec.connectionPool = try int(n, keys["connectionPool"]) }
        if let n = child(node, "merge") {
            spec.merge = try choice(n, MergeMode.self)
            // Pushes from children are not merges: nothing to skip in stacks whose background saves are pushes.
            if spec.merge != .didSave, [.nested, .viewChildren, .headless].contains(spec.topology) {
                throw fail(n, "the `\(spec.topology.rawValue)` topology has no merge to change (its background saves are pushes, or nothing is shown): remove merge or choose another topology")
            }
        }
        if let n = child(node, "objectTrumpDeletedElsewhere") { spec.objectTrumpDeletedElsewhere = try member(n, keys["objectTrumpDeletedElsewhere"]) }
        if let n = child(node, "mergeRelease") { spec.mergeRelease = try choice(n, AmbarMergeRelease.self) }
        if let n = child(node, "pinViewGeneration") {
            spec.pinViewGeneration = try bool(n)
            // Semantics §3.7: only a context on the coordinator can be pinned; a child reads its parent's generation.
            if spec.pinViewGeneration, [.nested, .viewChildren, .privateRoot, .headless].contains(spec.topology) {
                throw fail(n, "the `\(spec.topology.rawValue)` topology's view context is \(spec.topology == .headless ? "absent" : "a child context, which Core Data cannot pin to a query generation"): remove pinViewGeneration or choose ambar, container or history")
            }
        }
        if let n = child(node, "store") {
            spec.store = try choice(n, StoreKind.self)
            if spec.store == .inMemory { try refuseSQLiteOnlyStack(node, spec, store: n) }
        }
        if let n = child(node, "stores") {
            var names: [String] = []
            for item in try list(n) {
                _ = try self.keys(item, ScenarioKeys.storeConfiguration)
                let name = try string(child(item, "configuration")!)
                if names.contains(name) { throw fail(item, "the configuration '\(name)' is listed twice: each configuration is one store") }
                names.append(name)
            }
            guard !names.isEmpty else { throw fail(n, "stores lists at least one configuration (or leave it out for one store of every entity)") }
            if spec.store == .inMemory { throw fail(n, "each configuration's store is an SQLite file; an in-memory store has none (remove stores or use store: sqlite)") }
            if spec.topology == .ambar7 {
                throw fail(n, "the `ambar7` topology is the 7.x stack, which opens one store file: it has no stores by configuration (choose ambar, ambar8 or another topology)")
            }
            spec.stores = names
        }
        return spec
    }

    /// `stack.stores` (Docs/coredata-behaviour.md §14): each configuration is one of the model file's; the entity
    /// the actors work on and every entity its seed plan fills are in a listed configuration (§14.4: any other has
    /// nowhere to be saved), all in the entity's store (§14.3: a relationship may not cross stores); with several
    /// stores, history is the first store's and there is no query generation (§14.2), so `history` needs the
    /// entity in the first store and `pinViewGeneration` is refused.
    func checkStores(_ node: Node, stack: StackSpec, stackNode: Node, stores: [String], model: ModelSpec) throws {
        let configurations = model.entities?.configurations ?? []
        guard !configurations.isEmpty else {
            throw fail(node, "stores names configurations of a model file, and \(model.file ?? "the model") has none (remove stores, or give a model file with configurations)")
        }
        let known = configurations.map(\.name)
        for (i, name) in stores.enumerated() where !known.contains(name) {
            let item = (try? list(node)).flatMap { $0.indices.contains(i) ? $0[i] : nil } ?? node
            throw fail(child(item, "configuration") ?? item, "no configuration '\(name)' in \(model.file ?? "the model") (its configurations: \(known.joined(separator: ", ")))")
        }
        let listed = configurations.filter { stores.contains($0.name) }
        var needed = [model.entity]
        if let seeds = model.seeds { needed += seeds.entities.keys.sorted().filter { $0 != model.entity } }
        for entity in needed where !listed.contains(where: { $0.entities.contains(entity) }) {
            let holders = configurations.filter { $0.entities.contains(entity) }.map(\.name)
            let role = entity == model.entity ? "the scenario's entity" : "an entity the seed plan fills"
            throw fail(node, "\(role) '\(entity)' is in no listed configuration, so no store holds it (\(holders.isEmpty ? "no configuration of the model lists it" : "list \(holders.joined(separator: " or "))"))")
        }
        // A new object goes to the first listed store whose configuration holds its entity (§14.2).
        func store(of entity: String) -> String? { stores.first { name in listed.contains { $0.name == name && $0.entities.contains(entity) } } }
        let home = store(of: model.entity)
        for entity in needed.dropFirst() where store(of: entity) != home {
            throw fail(node, "the seed plan relates '\(model.entity)' (store \(home ?? "-")) to '\(entity)' (store \(store(of: entity) ?? "-")), and a relationship may not cross stores: list a configuration holding both first")
        }
        guard stores.count > 1 else { return }
        if stack.topology == .history, home != stores.first {
            throw fail(node, "the `history` topology merges by persistent history, which a coordinator of several stores keeps for the first store only: list \(home ?? "-") first (it holds \(model.entity))")
        }
        if stack.pinViewGeneration {
            throw fail(child(stackNode, "pinViewGeneration") ?? node, "a coordinator of several stores holds no query generation: remove pinViewGeneration or list one configuration")
        }
    }

    /// Docs/coredata-behaviour.md §7 "The in-memory store": each coordinator that adds an in-memory store gets a
    /// store of its own, so a stack of two coordinators on one store cannot have one; the Ambar topologies are the
    /// Ambar container on the scenario's store file; query generations and the connection pool are SQLite's. Each
    /// is refused where it is written.
    func refuseSQLiteOnlyStack(_ node: Node, _ spec: StackSpec, store: Node) throws {
        if [.ambar, .ambar8, .ambar7].contains(spec.topology) {
            throw fail(store, "the `\(spec.topology.rawValue)` topology is the Ambar container, which the workbench opens on an SQLite store file (with one coordinator or two): it has no in-memory store (choose container, nested, viewChildren, privateRoot or headless, or store: sqlite)")
        }
        if spec.topology == .history {
            throw fail(store, "the `\(spec.topology.rawValue)` topology opens two coordinators on one store, and an in-memory store cannot be shared: each coordinator would get an empty store of its own (choose container, nested, viewChildren, privateRoot or headless, or store: sqlite)")
        }
        if spec.pinViewGeneration, let n = child(node, "pinViewGeneration") {
            throw fail(n, "query generations need an SQLite store in WAL mode; an in-memory store has none (remove pinViewGeneration or use store: sqlite)")
        }
        if let n = child(node, "connectionPool") {
            throw fail(n, "the connection pool is an SQLite store's read connections; an in-memory store has none (remove connectionPool or use store: sqlite)")
        }
    }

    /// Docs/coredata-behaviour.md §6, §7: actors that need SQLite are refused where they are written when the stack
    /// has an in-memory store: a `writer` opens a second coordinator (which would get an empty store of its own),
    /// batch requests run SQL in the store, and a migrator migrates a file.
    func refuseSQLiteOnlyActors(_ phaseNodes: [Node], store: StoreKind) throws {
        guard store == .inMemory else { return }
        let why = [
            "writer": "opens a coordinator of its own, which would get an empty in-memory store of its own (an in-memory store cannot be shared)",
            "batch": "runs batch requests, which Core Data supports on SQLite stores only",
            "migrator": "migrates a store file, and an in-memory store has none",
        ]
        for node in phaseNodes {
            guard let actors = child(node, "actors"), let name = try child(node, "name").map(string) else { continue }
            for item in try list(actors) {
                guard case .map(let pairs, _) = item.tree, let pair = pairs.first, let reason = why[pair.key] else { continue }
                throw ScenarioError(file: file, line: pair.position?.line, column: pair.position?.column, field: "phases.\(name).\(pair.key)",
                                    message: "stack.store is inMemory, and a \(pair.key) \(reason): remove the \(pair.key) or use store: sqlite")
            }
        }
    }

    /// `saveParents: false` leaves a child's save in its parents; where background contexts are not children (every
    /// topology but nested, viewChildren and privateRoot) their saves reach the store themselves, and the key is
    /// refused where it is written.
    func refuseUnsavedParents(_ phaseNodes: [Node], topology: TopologyKind) throws {
        guard !TopologyKind.backgroundContextsAreChildren.contains(topology) else { return }
        for node in phaseNodes {
            guard let actors = child(node, "actors"), let name = try child(node, "name").map(string) else { continue }
            for item in try list(actors) {
                guard case .map(let pairs, _) = item.tree, let pair = pairs.first, ["importer", "deleter"].contains(pair.key),
                      let key = child(Node(tree: pair.value, path: "phases.\(name).\(pair.key)"), "saveParents"), try !bool(key) else { continue }
                let children = TopologyKind.backgroundContextsAreChildren.map(\.rawValue).joined(separator: ", ")
                throw fail(key, "the `\(topology.rawValue)` topology's background contexts save to the store themselves: they have no parent to leave unsaved (remove saveParents or choose \(children))")
            }
        }
    }

    /// A stack without a view context (`headless`) has nothing for a viewer to show and no
    /// context for an editor to be a child of: each is refused where it is written.
    func refuseViewActors(_ phaseNodes: [Node], topology: TopologyKind) throws {
        guard !topology.hasViewContext else { return }
        for node in phaseNodes {
            guard let actors = child(node, "actors"), let name = try child(node, "name").map(string) else { continue }
            for item in try list(actors) {
                // A fetcher on the view context (its default) has no context to fetch in.
                if case .map(let pairs, _) = item.tree, let pair = pairs.first, pair.key == "fetcher" {
                    let settings = Node(tree: pair.value, path: "phases.\(name).fetcher")
                    let context = child(settings, "context")
                    if try context.map(string) ?? "view" == "view" {
                        throw ScenarioError(file: file, line: (context?.tree.position ?? pair.position)?.line, column: (context?.tree.position ?? pair.position)?.column,
                                            field: context?.path ?? settings.path,
                                            message: "the `\(topology.rawValue)` topology has no view context to fetch in: set 'context: background' or choose a topology with a view context")
                    }
                }
                guard case .map(let pairs, _) = item.tree, let pair = pairs.first, ["viewer", "editor"].contains(pair.key) else { continue }
                let why = pair.key == "viewer" ? "nothing to show" : "no context for an editor's child"
                throw ScenarioError(file: file, line: pair.position?.line, column: pair.position?.column, field: "phases.\(name).\(pair.key)",
                                    message: "the `\(topology.rawValue)` topology has no view context (\(why)): remove the \(pair.key) or choose a topology with a view context")
            }
        }
    }

    func phase(_ node: Node, model: ModelSpec) throws -> Phase {
        // `-p phases.run.viewr.visibleObjects` names an actor of the phase: suggest the phase's
        // actors, not its own keys.
        let phaseKeys = ScenarioKeys.phase.keyNames
        if case .map(let pairs, _) = node.tree, let unknown = pairs.first(where: { !phaseKeys.contains($0.key) }) {
            let actorKinds = (try? child(node, "actors").map(list))??.compactMap { item -> String? in
                guard case .map(let p, _) = item.tree, p.count == 1 else { return nil }
                return p[0].key
            } ?? []
            if !actorKinds.isEmpty {
                let candidates = actorKinds + phaseKeys
                let nearest = candidates.min { Self.distance($0, unknown.key) < Self.distance($1, unknown.key) }.map { " (did you mean '\($0)'?)" } ?? ""
                throw ScenarioError(file: file, line: unknown.position?.line, column: unknown.position?.column,
                                    field: node.path.isEmpty ? unknown.key : "\(node.path).\(unknown.key)",
                                    message: "unknown key; a phase has name, kind, duration and actors, and this one's actors are \(actorKinds.joined(separator: ", "))\(nearest)")
            }
        }
        _ = try keys(node, ScenarioKeys.phase)
        let name = try string(child(node, "name")!)
        var kind = Phase.Kind(rawValue: name) ?? .run
        if let k = child(node, "kind") { kind = Phase.Kind(rawValue: try member(k, ScenarioKeys.phase["kind"]))! }
        let path = Node(tree: node.tree, path: "phases.\(name)")
        let duration = try child(path, "duration").map(duration)
        var actors: [ActorSpec] = []
        if let a = child(path, "actors") {
            let items = try list(a)
            for item in items { actors.append(try actor(item, phasePath: path.path, model: model)) }
            try checkViewers(zip(items, actors).compactMap { item, spec in if case .viewer(let v) = spec { return (item, v) } else { return nil } }, phasePath: path.path)
        }
        // Importers and a migrator end by themselves; other actors run for the phase's duration.
        func endsByItself(_ a: ActorSpec) -> Bool {
            switch a {
            case .importer, .migrator, .fetcher, .deleter: return true
            case .batch(let b): return b.requests != nil
            default: return false
            }
        }
        if kind == .run, duration == nil, actors.contains(where: { !endsByItself($0) }), !actors.contains(where: endsByItself) {
            throw fail(path, "a run phase without an importer needs a duration")
        }
        return Phase(name: name, kind: kind, duration: duration, actors: actors)
    }

    /// Several viewers in one phase are several controllers on the one view context, drawn by the one main queue:
    /// one display link (one `frameRate`), one view context (one `readOnly`), and each shows data (`frames: only`
    /// is a main queue with nothing on screen, which beside another viewer says nothing).
    func checkViewers(_ viewers: [(Node, ActorSpec.Viewer)], phasePath: String) throws {
        guard let (_, first) = viewers.first, viewers.count > 1 else { return }
        for (item, viewer) in viewers {
            guard case .map(let pairs, _) = item.tree, let body = pairs.first else { continue }
            let settings = Node(tree: body.value, path: "\(phasePath).viewer")
            func at(_ key: String) -> Node { child(settings, key) ?? settings }
            if viewer.frames == .only {
                throw fail(at("frames"), "a viewer with 'frames: only' shows nothing: beside another viewer it adds no frames (the viewers share one display link); remove it")
            }
            if viewer.frameRate != first.frameRate {
                throw fail(at("frameRate"), "the viewers of one phase share the main queue's display link: give them one frameRate (\(first.frameRate), found \(viewer.frameRate))")
            }
            if viewer.readOnly != first.readOnly {
                throw fail(at("readOnly"), "the viewers of one phase share the view context: give them one readOnly (\(first.readOnly), found \(viewer.readOnly))")
            }
        }
    }

    /// One actor of a phase (`kind: settings`): the settings are read by the kind's own step below.
    func actor(_ node: Node, phasePath: String, model: ModelSpec) throws -> ActorSpec {
        guard case .map(let pairs, _) = node.tree, pairs.count == 1 else {
            throw fail(node, "an actor is one of \(ScenarioKeys.actor.keyNames.joined(separator: ", ")), with its settings")
        }
        let kind = pairs[0].key
        let body = Node(tree: pairs[0].value, path: "\(phasePath).\(kind)")
        let settings: Node
        if case .scalar(let s, _) = body.tree, s.isEmpty || s == "~" || s == "null" { settings = Node(tree: .map([], body.tree.position), path: body.path) } else { settings = body }
        let actor = ActorSettings(reader: self, kind: kind, body: body, settings: settings, model: model)
        switch kind {
        case "importer": return try importer(actor)
        case "viewer": return try viewer(actor)
        case "editor": return try editor(actor)
        case "temporary": return try temporary(actor)
        case "writer": return try writer(actor)
        case "migrator": return try migrator(actor)
        case "fetcher": return .fetcher(try fetcher(settings, model: model, needsID: actor.needsID))
        case "deleter": return try deleter(actor)
        case "batch": return try batch(actor)
        default:
            let allowed = ScenarioKeys.actor.keyNames
            let suggestion = allowed.min { Self.distance($0, kind) < Self.distance($1, kind) }!
            throw ScenarioError(file: file, line: pairs[0].position?.line, column: pairs[0].position?.column, field: "\(phasePath).\(kind)",
                                message: "unknown actor; expected one of \(allowed.joined(separator: ", ")) (did you mean '\(suggestion)'?)")
        }
    }

    /// An actor's settings as its kind's reader sees them, with the helpers every kind uses: the kind's keys,
    /// bounds and members are the table's (ScenarioKeys).
    struct ActorSettings {
        let reader: Reader
        let kind: String
        /// The node under the kind's key, as written: where a complaint about the actor as a whole points.
        let body: Node
        /// The actor's settings: `body`, or an empty mapping for an actor written with none.
        let settings: Node
        let model: ModelSpec

        func opt<T>(_ key: String, _ read: (Node) throws -> T, _ fallback: T) throws -> T {
            try reader.child(settings, key).map(read) ?? fallback
        }
        func table() -> ScenarioObject { ScenarioKeys.object(kind) }
        func checkKeys() throws { _ = try reader.keys(settings, table()) }
        func integer(_ key: String) -> (Node) throws -> Int { { try reader.int($0, table()[key]) } }
        func number(_ key: String) -> (Node) throws -> Double { { try reader.double($0, table()[key]) } }
        /// Actors that pick records by number need the entity's integer id.
        func needsID(_ what: String) throws {
            guard model.idKey == nil else { return }
            throw reader.fail(body, "\(what) picks records by their integer id, and \(model.entity) has none (give the model an idKey)")
        }
    }

    /// An importer (``ActorSpec/Importer``): its groups and group parents need the to-one relationships they link
    /// through, and what one save holds must fit in this machine's memory.
    func importer(_ actor: ActorSettings) throws -> ActorSpec {
        let settings = actor.settings, model = actor.model
        try actor.checkKeys()
        let groups = try actor.opt("groups", actor.integer("groups"), 0)
        if groups > 0 {
            let file = model.entities ?? ScenarioLoader.workloadModel
            let entity = file.entities.first { $0.name == model.entity }
            guard entity?.relationships?.contains(where: { !($0.toMany ?? false) }) == true else {
                throw fail(child(settings, "groups")!, "\(model.entity) has no to-one relationship to link records to groups through")
            }
        }
        let objects = try actor.opt("objects", actor.integer("objects"), 1000)
        let chunkSize = try actor.opt("chunkSize", actor.integer("chunkSize"), 500)
        let saveEvery = try actor.opt("saveEvery", actor.integer("saveEvery"), 1)
        // One save holds its objects in memory until it is done: bound what one save carries by this machine's
        // memory (about 2 KB an object, registry, snapshot and row cache together), not by a fixed number.
        let perSave = min(objects, chunkSize.multipliedReportingOverflow(by: saveEvery).overflow ? Int.max : chunkSize * saveEvery)
        let bytes = Double(perSave) * Self.bytesPerImportedObject
        let budget = Double(ProcessInfo.processInfo.physicalMemory) / 2
        if bytes > budget {
            throw fail(child(settings, "chunkSize") ?? child(settings, "objects") ?? settings,
                       "one save would hold \(perSave) objects, about \(Int(bytes / 1e9)) GB at 2 KB each: more than half of this machine's \(Int(Double(ProcessInfo.processInfo.physicalMemory) / 1e9)) GB (lower chunkSize or saveEvery)")
        }
        var importer = ActorSpec.Importer(
            objects: objects,
            chunkSize: chunkSize,
            updateFraction: try actor.opt("updateFraction", actor.number("updateFraction"), 0),
            distribution: try actor.opt("distribution", { try choice($0, Distribution.self) }, .uniform),
            parallel: try actor.opt("parallel", actor.integer("parallel"), 1),
            rate: try actor.opt("rate", rate, .unlimited))
        if importer.updateFraction > 0 { try actor.needsID("an importer with updateFraction") }
        importer.deleteFraction = try actor.opt("deleteFraction", actor.number("deleteFraction"), 0)
        if importer.deleteFraction > 0 {
            try actor.needsID("an importer with deleteFraction")
            // Each chunk's objects are updates, deletes or inserts: the two fractions share the chunk.
            guard importer.updateFraction + importer.deleteFraction <= 1 else {
                throw fail(child(settings, "deleteFraction")!, "updateFraction + deleteFraction must be at most 1 (each chunk's objects are updated, deleted or inserted), found \(importer.updateFraction) + \(importer.deleteFraction)")
            }
        }
        importer.reset = try actor.opt("reset", { try choice($0, ImportReset.self) }, .afterChunk)
        importer.saveEvery = saveEvery
        importer.groups = groups
        importer.groupParents = try actor.opt("groupParents", actor.integer("groupParents"), 0)
        importer.saveParents = try actor.opt("saveParents", bool, true)
        if importer.groupParents > 0 {
            let file = model.entities ?? ScenarioLoader.workloadModel
            let entity = file.entities.first { $0.name == model.entity }
            let link = entity?.relationships?.first { !($0.toMany ?? false) }
            let groupEntity = file.entities.first { $0.name == link?.destination }
            guard groups > 0, groupEntity?.relationships?.contains(where: { !($0.toMany ?? false) && $0.name != link?.inverse }) == true else {
                throw fail(child(settings, "groupParents")!, "groupParents needs groups, and a to-one relationship from \(link?.destination ?? "the group entity") to hang them under")
            }
        }
        return .importer(importer)
    }

    /// A viewer (``ActorSpec/Viewer``): a frame rate of the table's, and no key about data for a viewer that reads
    /// none.
    func viewer(_ actor: ActorSettings) throws -> ActorSpec {
        let settings = actor.settings, model = actor.model
        try actor.checkKeys()
        let frameRate = try actor.opt("frameRate", { try int($0) }, 60)
        guard case .integerChoice(let rates) = actor.table()["frameRate"].kind else { preconditionFailure("frameRate is a choice of integers") }
        guard rates.contains(frameRate) else {
            throw fail(child(settings, "frameRate")!, "expected \(rates.map(String.init).joined(separator: " or ")), found \(frameRate)")
        }
        let visible = try actor.opt("visibleObjects", actor.integer("visibleObjects"), 20)
        var viewer = ActorSpec.Viewer(
            visibleObjects: visible,
            readOnly: try actor.opt("readOnly", bool, false), frameRate: frameRate,
            request: try child(settings, "request").map { try viewerRequest($0, model: model) } ?? ViewerRequest(),
            window: try actor.opt("window", actor.integer("window"), visible),
            frc: try actor.opt("frc", { try choice($0, ControllerEvaluation.self) }, .coreData))
        viewer.scroll = try actor.opt("scroll", scrollRate, 0)
        viewer.frames = try actor.opt("frames", { try choice($0, ViewerFrames.self) }, .window)
        viewer.tracksChanges = try actor.opt("tracksChanges", bool, true)
        // A frames-only viewer has no controller and reads nothing; a key about its data is a
        // mistake, not something to ignore.
        if viewer.frames == .only, let key = ["window", "scroll", "request", "frc", "tracksChanges"].first(where: { child(settings, $0) != nil }) {
            throw fail(child(settings, key)!, "a viewer with 'frames: only' draws frames and reads no data: remove '\(key)' or set 'frames: window'")
        }
        // A controller that tracks no change evaluates none: how it would evaluate them is a mistake to flag.
        if !viewer.tracksChanges, let frc = child(settings, "frc") {
            throw fail(frc, "a viewer with 'tracksChanges: false' evaluates no change: remove 'frc' or set 'tracksChanges: true'")
        }
        return .viewer(viewer)
    }

    /// An editor (``ActorSpec/Editor``).
    func editor(_ actor: ActorSettings) throws -> ActorSpec {
        try actor.checkKeys()
        return .editor(.init(rate: try actor.opt("rate", rate, .perSecond(5)), edits: try actor.opt("edits", actor.integer("edits"), 1),
                             saveViewContext: try actor.opt("saveViewContext", bool, true)))
    }

    /// A temporary context (``ActorSpec/Temporary``): it picks records by id.
    func temporary(_ actor: ActorSettings) throws -> ActorSpec {
        try actor.checkKeys()
        try actor.needsID("a temporary context")
        return .temporary(.init(rate: try actor.opt("rate", rate, .perSecond(5)), edits: try actor.opt("edits", actor.integer("edits"), 1),
                                save: try actor.opt("save", bool, false)))
    }

    /// A writer (``ActorSpec/Writer``): it picks records by id.
    func writer(_ actor: ActorSettings) throws -> ActorSpec {
        try actor.checkKeys()
        try actor.needsID("a writer")
        return .writer(.init(rate: try actor.opt("rate", rate, .perSecond(5)), edits: try actor.opt("edits", actor.integer("edits"), 1),
                             distribution: try actor.opt("distribution", { try choice($0, Distribution.self) }, .hotspot)))
    }

    /// A migrator (``ActorSpec/Migrator``): the store opened with the model's next version, migrated in place.
    func migrator(_ actor: ActorSettings) throws -> ActorSpec {
        let settings = actor.settings, model = actor.model, body = actor.body
        try actor.checkKeys()
        let versionNode = child(settings, "version")
        var given: ModelFile?
        if let versionNode {
            if let entities = child(settings, "entities") { throw fail(entities, "give the next version's entities or a version of the model file, not both") }
            let name = try string(versionNode)
            guard let path = model.file, !model.versions.isEmpty else {
                throw fail(versionNode, "version names a version of the scenario's model file, and \(model.file.map { "\($0) has no versions" } ?? "the model is not read from a file"): give entities instead")
            }
            guard let target = model.versions.first(where: { $0.name == name }) else {
                throw fail(versionNode, "no version '\(name)' in \(path) (its versions: \(model.versions.map(\.name).joined(separator: ", ")))")
            }
            given = ModelFile(entities: target.entities)
            given?.configurations = target.configurations
        } else if child(settings, "entities") == nil, let start = model.versions.firstIndex(where: { $0.name == model.version }),
                  start + 1 < model.versions.count {
            // A versioned model file: the version after the one the store was made with.
            given = ModelFile(entities: model.versions[start + 1].entities)
            given?.configurations = model.versions[start + 1].configurations
        }
        return .migrator(.init(to: try nextVersion(child(settings, "entities"), model: model, at: versionNode ?? body, given: given)))
    }

    /// A deleter (``ActorSpec/Deleter``): `objects` or `fraction`, and an id to pick records by unless it selects
    /// all.
    func deleter(_ actor: ActorSettings) throws -> ActorSpec {
        let settings = actor.settings
        try actor.checkKeys()
        let select = try actor.opt("select", { try choice($0, ActorSpec.Deleter.Select.self) }, .keys)
        // `select: all` fetches whatever the entity holds: it needs no id to pick by.
        if select == .keys { try actor.needsID("a deleter") }
        let objects = try child(settings, "objects").map(actor.integer("objects"))
        let fraction = try child(settings, "fraction").map { n in
            let f = try double(n, max: actor.table()["fraction"].kind.numberRange?.max)
            guard f > 0 else { throw fail(n, "a fraction of the records stored, more than 0 and at most 1, found \(f)") }
            return f
        }
        guard (objects == nil) != (fraction == nil) else {
            throw fail(child(settings, "fraction") ?? settings, objects == nil ? "a deleter needs 'objects' (how many records) or 'fraction' (of the records stored when it starts)" : "give 'objects' or 'fraction', not both")
        }
        return .deleter(.init(objects: objects, fraction: fraction, chunkSize: try actor.opt("chunkSize", actor.integer("chunkSize"), 100),
                              rate: try actor.opt("rate", rate, .unlimited), select: select, saveParents: try actor.opt("saveParents", bool, true)))
    }

    /// A batch request actor (``ActorSpec/Batch``): `size` a number of records, or `all` for a batch delete.
    func batch(_ actor: ActorSettings) throws -> ActorSpec {
        let settings = actor.settings
        try actor.checkKeys()
        let kind = try actor.opt("kind", { try choice($0, ActorSpec.Batch.Kind.self) }, .update)
        var size = 100, allRecords = false
        if let node = child(settings, "size") {
            if case .scalar("all", _) = node.tree {
                guard kind == .delete else {
                    throw fail(node, "size: all is every record of the entity, which only a batch delete takes (set kind: delete, found \(kind.rawValue))")
                }
                allRecords = true
            } else if case .scalar(let s, _) = node.tree, !ScenarioLoader.isIntegerLiteral(s.replacingOccurrences(of: "_", with: "")) {
                throw fail(node, "expected a number of records or all, found '\(s)'")
            } else {
                size = try int(node, actor.table()["size"])
            }
        }
        // A delete of every record names none by its id.
        if !allRecords { try actor.needsID("a batch request") }
        var batch = ActorSpec.Batch(kind: kind, rate: try actor.opt("rate", rate, .perSecond(1)), size: size,
                                    mergeBy: try actor.opt("mergeBy", { try choice($0, ActorSpec.Batch.MergeBy.self) }, .ids))
        batch.allRecords = allRecords
        batch.requests = try child(settings, "requests").map(actor.integer("requests"))
        return .batch(batch)
    }

    /// The node of a model's `entities` list that `error` names: the entity, then its fetch index and the index's
    /// element, or its property; the list itself when the error names none of them.
    func locate(_ error: ModelError, in entities: Node) -> Node {
        func named(_ nodes: [Node], _ name: String) -> Node? {
            nodes.last { child($0, "name").flatMap { try? string($0) } == name }
        }
        guard let entityName = error.entity, let entity = named((try? list(entities)) ?? [], entityName) else { return entities }
        if let indexName = error.fetchIndex {
            guard let index = child(entity, "fetchIndexes").flatMap({ named((try? list($0)) ?? [], indexName) }) else { return entity }
            guard let property = error.property, let elements = child(index, "elements").flatMap({ try? list($0) }) else { return index }
            return elements.first { (try? string($0)) == property || child($0, "property").flatMap { try? string($0) } == property } ?? index
        }
        guard let property = error.property else { return entity }
        for key in ["attributes", "relationships"] {
            if let found = child(entity, key).flatMap({ named((try? list($0)) ?? [], property) }) { return found }
        }
        return entity
    }

    /// A migrator's next model version: the given entities, or by default the model with two attributes added to
    /// the scenario's entity (`rating`, an integer defaulting to 0, and an optional `note`: the most common
    /// lightweight migration). It must keep the entity and the keys the actors and the oracle read, and Core Data
    /// must be able to infer its mapping.
    /// - Parameter given: the next version named by the migrator's `version:` (or following the model file's first).
    func nextVersion(_ node: Node?, model: ModelSpec, at body: Node, given: ModelFile? = nil) throws -> ModelFile {
        let current = model.entities ?? ScenarioLoader.workloadModel
        var next = current
        if let given {
            next = given
        } else if let node {
            let json = try jsonObject(node)
            do {
                next = try JSONDecoder().decode(ModelFile.self, from: try JSONSerialization.data(withJSONObject: ["entities": json]))
            } catch let error as DecodingError {
                throw fail(node, "not a model: \(ModelFileDecodingDescription(paths: .keys, namesAttributeTypes: true).describe(error))")
            }
        } else if let index = next.entities.firstIndex(where: { $0.name == model.entity }) {
            var rating = ModelFile.Attribute(name: "rating", type: .integer64, optional: false, defaultValue: .number(0))
            rating.optional = false
            next.entities[index].attributes = (next.entities[index].attributes ?? []) + [rating, ModelFile.Attribute(name: "note", type: .string)]
        }
        let place = node ?? body
        guard next.entities.contains(where: { $0.name == model.entity }) else {
            throw fail(place, "the next version has no entity \(model.entity), which the actors and the oracle read")
        }
        // Its attributes include those it inherits.
        let names = Set(next.allAttributes(of: model.entity).map(\.name))
        for key in [model.idKey, model.sortKey].compactMap({ $0 }) + model.fields where !names.contains(key) {
            throw fail(place, "the next version's \(model.entity) has no attribute '\(key)', which the actors and the oracle read")
        }
        do {
            let previous = try ManagedObjectModel(file: current)
            let following = try ManagedObjectModel(file: next)
            guard following.versionHash != previous.versionHash else {
                throw fail(place, "the next version stores the same tables as the current one: there is nothing to migrate (add, remove or rename something; indexes alone do not count, as Core Data leaves them out of the version hash)")
            }
            try following.checkInferredMapping(from: previous)
        } catch let error as ModelError {
            throw fail(node.map { locate(error, in: $0) } ?? place, error.description)
        } catch let error as ObjectGraphError {
            throw fail(place, "Core Data cannot infer this migration: \(error.message)\(error.entityName.map { " (\($0)\(error.propertyName.map { ".\($0)" } ?? ""))" } ?? "")")
        }
        return next
    }

    /// `knee: { key, says }`: the thresholds say where the sweep's edge is, so a knee needs at least one.
    func knee(_ node: Node, thresholds: [Threshold]) throws -> Knee {
        _ = try keys(node, ScenarioKeys.knee)
        guard !thresholds.isEmpty else { throw fail(node, "a knee is where the thresholds are first missed: add a threshold") }
        let key = try string(child(node, "key")!)
        return Knee(key: key, says: try child(node, "says").map(string) ?? Knee.defaultSays)
    }

    /// The knee's key is a matrix key whose values are numbers (checked on the document before the matrix expands).
    func checkKnee(_ tree: YAMLTree) throws {
        let root = Node(tree: tree, path: "")
        guard let node = child(root, "knee"), let keyNode = child(node, "key") else { return }
        let key = try string(keyNode)
        guard let matrix = child(root, "matrix"), case .map(let pairs, _) = matrix.tree else {
            throw fail(keyNode, "a knee sweeps a matrix key, and this scenario has no matrix")
        }
        guard let pair = pairs.first(where: { $0.key == key }) else {
            let names = pairs.map(\.key)
            throw fail(keyNode, "expected a matrix key (\(names.joined(separator: ", "))), found '\(key)'\(Self.suggestion(key, names))")
        }
        for value in try list(Node(tree: pair.value, path: "matrix.\(pair.key)")) {
            let s = try scalar(value, "a number")
            guard Double(s.replacingOccurrences(of: "_", with: "")) != nil else { throw fail(value, "a knee's key takes numbers, found '\(s)'") }
        }
    }

    /// One `objective:` item: a metric name, or `{metric, statistic, label, polarity}`.
    func objectiveCriterion(_ node: Node) throws -> ObjectiveCriterion {
        func metricName(_ n: Node) throws -> String {
            let metric = try string(n)
            guard MetricCatalog.names.contains(metric) else {
                throw fail(n, "unknown metric '\(metric)'; expected one of \(MetricCatalog.names.sorted().joined(separator: ", "))")
            }
            return metric
        }
        if case .scalar = node.tree { return ObjectiveCriterion(try metricName(node)) }
        _ = try keys(node, ScenarioKeys.objectiveCriterion)
        var criterion = ObjectiveCriterion(try metricName(child(node, "metric")!))
        if let n = child(node, "statistic") {
            let statistic = try string(n)
            guard MetricCatalog.statistics.contains(statistic) else {
                throw fail(n, "unknown statistic '\(statistic)'; expected one of \(MetricCatalog.statistics.joined(separator: ", "))")
            }
            criterion.statistic = statistic
        }
        if let n = child(node, "label") { criterion.label = try string(n) }
        if let n = child(node, "polarity") { criterion.polarity = try choice(n, Threshold.Polarity.self) }
        return criterion
    }

    func threshold(_ node: Node) throws -> Threshold {
        _ = try keys(node, ScenarioKeys.threshold)
        let metric = try string(child(node, "metric")!)
        guard MetricCatalog.names.contains(metric) else {
            throw fail(child(node, "metric")!, "unknown metric '\(metric)'; expected one of \(MetricCatalog.names.sorted().joined(separator: ", "))")
        }
        let statistic = try child(node, "statistic").map(string) ?? "p99"
        guard MetricCatalog.statistics.contains(statistic) else {
            throw fail(child(node, "statistic")!, "unknown statistic '\(statistic)'; expected one of \(MetricCatalog.statistics.joined(separator: ", "))")
        }
        let hasMax = child(node, "max") != nil, hasMin = child(node, "min") != nil
        guard hasMax != hasMin else { throw fail(node, "a threshold has either max (lower is better) or min (higher is better)") }
        var polarity: Threshold.Polarity = hasMax ? .lowerIsBetter : .higherIsBetter
        if let p = child(node, "polarity") {
            let s = try string(p)
            guard let v = Threshold.Polarity(rawValue: s) else { throw fail(p, "expected lowerIsBetter or higherIsBetter, found '\(s)'") }
            guard v == polarity else { throw fail(p, "\(s) does not fit \(hasMax ? "max" : "min")") }
            polarity = v
        }
        let limitNode = child(node, hasMax ? "max" : "min")!
        let limit: Double
        if case .scalar(let s, _) = limitNode.tree, s.hasSuffix("ms") || s.hasSuffix("s") {
            limit = try duration(limitNode) * 1000  // latencies are compared in milliseconds
        } else {
            limit = try double(limitNode)
        }
        var threshold = Threshold(metric: metric, statistic: statistic, polarity: polarity, limit: limit)
        if let n = child(node, "fails") { threshold.fails = try bool(n) }
        return threshold
    }
}

extension YAMLTree {
    var kindName: String {
        switch self {
        case .scalar: return "value"
        case .list: return "list"
        case .map: return "mapping"
        }
    }
}

extension ObjectPredicate {
    /// The key paths a predicate reads, in the order written (for validating a scenario's predicate).
    var keyPaths: [String] {
        var paths: [String] = []
        func visit(_ node: Node) {
            switch node {
            case .constant: break
            case .comparison(let c):
                for side in [c.left, c.right] { if case .keyPath(let k) = side { paths.append(k) } }
            case .and(let nodes), .or(let nodes): nodes.forEach(visit)
            case .not(let inner): visit(inner)
            }
        }
        visit(node)
        return paths
    }
}
