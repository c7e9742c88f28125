import Foundation

/// Where a value stands in an evidence file (the key path, line and column), so a check made after loading (against
/// the entry's scenario, against the fit plan) points at it.
public struct EvidencePlace: Sendable, Equatable {
    public var field: String
    public var line: Int?
    public var column: Int?

    init(_ node: Reader.Node) {
        field = node.path
        line = node.tree.position?.line
        column = node.tree.position?.column
    }

    public init(field: String, line: Int? = nil, column: Int? = nil) {
        self.field = field
        self.line = line
        self.column = column
    }

    /// An error at this place of `file`.
    public func fail(_ file: String, _ message: String) -> ScenarioError {
        ScenarioError(file: file, line: line, column: column, field: field, message: message)
    }
}

/// One published measurement of Core Data on a device (`Profiles/evidence/<name>.yaml`, Profiles/README.md
/// "Evidence"): where it comes from, what was measured, each figure with its unit, how it was read, whether the fit
/// may see it, and the scenario variant and metric that reproduce it.
public struct EvidenceEntry: Sendable, Equatable {
    /// Whether the fit sees the entry (`fit`) or it only judges the fit (`check`).
    public enum Role: String, Sendable, CaseIterable { case fit, check }
    /// How the figures were taken from the source.
    public enum ReadFrom: String, Sendable, CaseIterable { case table, chart, text }
    /// First-hand: from the publication of whoever measured; second-hand: from someone quoting it.
    public enum Hand: String, Sendable, CaseIterable { case first, second }

    /// A metric of one variant, as a run's metrics name it.
    public struct Reference: Sendable, Equatable {
        public var metric: String
        public var statistic: String
        public var label: String
    }

    /// One published number and the variant and metric of ours that stand for it.
    public struct Figure: Sendable, Equatable {
        /// What the figure is, in a few words ("500 notes").
        public var name: String
        public var variant: String
        /// The size the source measured (the number of objects), set on the entry's `scale` keys: how a test runs
        /// the same workload scaled down and extrapolates it.
        public var size: Int?
        public var of: Reference
        /// The published value, in `unit`.
        public var value: Double
        public var unit: Unit
        /// Where `variant` is written.
        public var variantAt: EvidencePlace? = nil
    }

    /// A published ratio between two variants' figures (`larger` / `smaller`), compared with ours.
    public struct Ratio: Sendable, Equatable {
        public var claim: String
        public var of: Reference
        public var larger: String
        public var smaller: String
        public var value: Double
        /// Where `larger` and `smaller` are written.
        public var largerAt: EvidencePlace? = nil
        public var smallerAt: EvidencePlace? = nil
    }

    /// An ordering the source shows: `larger`'s metric is at least `factor` times `smaller`'s.
    public struct Direction: Sendable, Equatable {
        public var claim: String
        public var of: Reference
        public var larger: String
        public var smaller: String
        public var factor: Double
        /// Where `larger` and `smaller` are written.
        public var largerAt: EvidencePlace? = nil
        public var smallerAt: EvidencePlace? = nil
    }

    /// A unit a published figure is given in, and its factor to the metric's own unit.
    public enum Unit: String, Sendable, CaseIterable {
        case s, ms, us, bytes, KB, MB, GB

        /// Whether figures in this unit are times (fitted and held to the fit) rather than sizes.
        public var isTime: Bool { [.s, .ms, .us].contains(self) }

        /// Why a figure in this unit cannot stand for `reference`, or nil when it can: a time unit goes on a
        /// duration of a metric measured in time, a size unit on a metric measured in bytes.
        public func mismatch(_ reference: Reference) -> String? {
            let (kind, metrics) = isTime ? ("a time", MetricCatalog.timeMetrics) : ("a size", MetricCatalog.sizeMetrics)
            guard metrics.contains(reference.metric) else {
                return "\(rawValue) is \(kind) unit and \(reference.metric) is not measured in \(isTime ? "time" : "bytes"); \(kind) unit goes on \(metrics.sorted().joined(separator: ", "))"
            }
            guard reference.statistic != "count" else {
                return "\(rawValue) is \(kind) unit and the count of \(reference.metric) is a number of events: use another statistic (max, p50, mean, …)"
            }
            return nil
        }

        /// The value in the unit a run reports for the same kind of quantity: milliseconds for times, bytes for
        /// sizes (MB as 10^6 bytes, as the sources write them).
        public func inMetricUnit(_ value: Double) -> Double {
            switch self {
            case .s: return value * 1000
            case .ms: return value
            case .us: return value / 1000
            case .bytes: return value
            case .KB: return value * 1e3
            case .MB: return value * 1e6
            case .GB: return value * 1e9
            }
        }
    }

    /// The file's name without `.yaml`.
    public var name: String
    public var file: String
    public var title: String
    public var source: String
    /// The profile this entry belongs to (`Profiles/<device>.yaml`): the device the measurement was taken on.
    public var device: String
    /// The device as the source names it, and its operating system.
    public var deviceName: String
    public var os: String
    /// What was measured, in our words, and how the source timed it.
    public var measured: String
    public var readFrom: ReadFrom
    public var hand: Hand
    public var role: Role
    /// The scenario file that reproduces it, relative to the repository.
    public var scenario: String
    /// How our scenario differs from the source's setup, if it does.
    public var differences: String
    /// The scenario keys a figure's `size` is set on (all to the same number) to run its workload at another size.
    public var scale: [String]
    public var figures: [Figure]
    public var ratios: [Ratio]
    public var directions: [Direction]
    /// Where `device`, `scenario` and each `scale` key are written.
    public var deviceAt: EvidencePlace? = nil
    public var scenarioAt: EvidencePlace? = nil
    public var scaleAt: [EvidencePlace] = []

    /// Whether the entry has figures the fit and the test hold to a ratio (times).
    public var isTimed: Bool { figures.contains { $0.unit.isTime } }

    /// Every variant the entry names.
    public var variants: [String] {
        var names: [String] = []
        let named = figures.map(\.variant) + ratios.flatMap({ [$0.larger, $0.smaller] }) + directions.flatMap({ [$0.larger, $0.smaller] })
        for v in named where !names.contains(v) { names.append(v) }
        return names
    }
}

/// Reads `Profiles/evidence/`: every entry file (all `*.yaml` but `fit.yaml`) and the fit's structure (`fit.yaml`).
public enum EvidenceLoader {
    /// The entries of `folder`, sorted by file name; an error names the file, line and field.
    public static func entries(in folder: URL) throws -> [EvidenceEntry] {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".yaml") && $0 != "fit.yaml" }.sorted()
        return try files.map { try entry(file: folder.appendingPathComponent($0).path) }
    }

    public static func entry(file: String) throws -> EvidenceEntry {
        try entry(text: try ScenarioLoader.readScenarioText(file, what: "evidence entry"), file: file)
    }

    public static func entry(text: String, file: String) throws -> EvidenceEntry {
        let tree = try YAMLTree.parse(text, file: file)
        let r = Reader(file: file)
        let root = Reader.Node(tree: tree, path: "")
        _ = try r.keys(root, allowed: ["title", "source", "device", "deviceName", "os", "measured", "read", "role", "scenario", "differences", "scale", "figures", "ratios", "directions"],
                       required: ["title", "source", "device", "deviceName", "os", "measured", "read", "role", "scenario"])
        func field(_ key: String) throws -> String { try r.string(r.child(root, key)!) }
        let device = try field("device")
        guard !device.isEmpty, device.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
            throw r.fail(r.child(root, "device")!, "a profile name: letters, digits and -, found '\(device)'")
        }
        let read = r.child(root, "read")!
        _ = try r.keys(read, allowed: ["from", "hand"], required: ["from", "hand"])
        func reference(_ n: Reader.Node) throws -> EvidenceEntry.Reference {
            let metric = try r.string(r.child(n, "metric")!)
            guard MetricCatalog.names.contains(metric) else { throw r.fail(r.child(n, "metric")!, "unknown metric '\(metric)'") }
            let statistic = try r.child(n, "statistic").map(r.string) ?? "value"
            guard MetricCatalog.statistics.contains(statistic) else {
                throw r.fail(r.child(n, "statistic")!, "unknown statistic '\(statistic)'; expected one of \(MetricCatalog.statistics.joined(separator: ", "))")
            }
            return EvidenceEntry.Reference(metric: metric, statistic: statistic, label: try r.child(n, "label").map(r.string) ?? "")
        }
        let figures = try r.child(root, "figures").map(r.list)?.map { n -> EvidenceEntry.Figure in
            _ = try r.keys(n, allowed: ["name", "variant", "size", "metric", "statistic", "label", "value", "unit"], required: ["name", "variant", "metric", "value", "unit"])
            let valueNode = r.child(n, "value")!
            let value = try r.double(valueNode, min: 0)
            guard value > 0 else { throw r.fail(valueNode, "a published figure is more than 0") }
            let of = try reference(n)
            let unitNode = r.child(n, "unit")!
            let unit = try r.choice(unitNode, EvidenceEntry.Unit.self)
            if let mismatch = unit.mismatch(of) { throw r.fail(unitNode, mismatch) }
            let variantNode = r.child(n, "variant")!
            return EvidenceEntry.Figure(name: try r.string(r.child(n, "name")!), variant: try r.string(variantNode),
                                        size: try r.child(n, "size").map { try r.int($0, min: 1, max: 100_000_000) }, of: of, value: value, unit: unit,
                                        variantAt: EvidencePlace(variantNode))
        } ?? []
        let ratios = try r.child(root, "ratios").map(r.list)?.map { n -> EvidenceEntry.Ratio in
            _ = try r.keys(n, allowed: ["claim", "metric", "statistic", "label", "larger", "smaller", "value"], required: ["claim", "metric", "larger", "smaller", "value"])
            let (larger, smaller) = (r.child(n, "larger")!, r.child(n, "smaller")!)
            return EvidenceEntry.Ratio(claim: try r.string(r.child(n, "claim")!), of: try reference(n), larger: try r.string(larger),
                                       smaller: try r.string(smaller), value: try r.double(r.child(n, "value")!, min: 1e-9),
                                       largerAt: EvidencePlace(larger), smallerAt: EvidencePlace(smaller))
        } ?? []
        let directions = try r.child(root, "directions").map(r.list)?.map { n -> EvidenceEntry.Direction in
            _ = try r.keys(n, allowed: ["claim", "metric", "statistic", "label", "larger", "smaller", "factor"], required: ["claim", "metric", "larger", "smaller"])
            let (larger, smaller) = (r.child(n, "larger")!, r.child(n, "smaller")!)
            return EvidenceEntry.Direction(claim: try r.string(r.child(n, "claim")!), of: try reference(n), larger: try r.string(larger),
                                           smaller: try r.string(smaller), factor: try r.child(n, "factor").map { try r.double($0, min: 0) } ?? 1,
                                           largerAt: EvidencePlace(larger), smallerAt: EvidencePlace(smaller))
        } ?? []
        let scenarioNode = r.child(root, "scenario")!
        let scenario = try r.string(scenarioNode)
        // The fit reads the scenario from the repository: a path that leaves it would run a file the evidence does
        // not hold.
        guard !scenario.isEmpty, !scenario.hasPrefix("/"), !scenario.split(separator: "/").contains("..") else {
            throw r.fail(scenarioNode, "a scenario file relative to the repository and inside it (no leading /, no .. component), found '\(scenario)'")
        }
        let scaleNodes = try r.child(root, "scale").map(r.list) ?? []
        guard !(figures.isEmpty && ratios.isEmpty && directions.isEmpty) else {
            throw r.fail(root, "an entry needs figures, ratios or directions: what the source published")
        }
        let name = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
        return EvidenceEntry(
            name: name, file: file, title: try field("title"), source: try field("source"), device: device,
            deviceName: try field("deviceName"), os: try field("os"), measured: try field("measured"),
            readFrom: try r.choice(r.child(read, "from")!, EvidenceEntry.ReadFrom.self), hand: try r.choice(r.child(read, "hand")!, EvidenceEntry.Hand.self),
            role: try r.choice(r.child(root, "role")!, EvidenceEntry.Role.self), scenario: scenario,
            differences: try r.child(root, "differences").map(r.string) ?? "",
            scale: try scaleNodes.map(r.string), figures: figures, ratios: ratios, directions: directions,
            deviceAt: EvidencePlace(r.child(root, "device")!), scenarioAt: EvidencePlace(scenarioNode), scaleAt: scaleNodes.map(EvidencePlace.init))
    }

    /// Checks that every variant an entry names is one of its scenario's, pointing at the first place that names
    /// one it lacks.
    public static func checkVariants(_ entry: EvidenceEntry, variants: [String]) throws {
        let named: [(String, EvidencePlace?)] = entry.figures.map { ($0.variant, $0.variantAt) }
            + entry.ratios.flatMap { [($0.larger, $0.largerAt), ($0.smaller, $0.smallerAt)] }
            + entry.directions.flatMap { [($0.larger, $0.largerAt), ($0.smaller, $0.smallerAt)] }
        for (name, place) in named where !variants.contains(name) {
            throw (place ?? EvidencePlace(field: "variant")).fail(entry.file, "no variant named '\(name)' in \(entry.scenario); its variants are \(variants.joined(separator: ", "))")
        }
    }
}
