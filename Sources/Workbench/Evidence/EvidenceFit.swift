import Foundation
import ObjectGraph
import TraceReplay

/// Runs the scenarios of the evidence (Profiles/evidence/) under cost profiles, fits the plan's parameters to the
/// `fit` entries per device, and judges profiles against every entry (Profiles/README.md "How the fit works").
///
/// A simulated run's times are sums of operation counts times their costs, so a figure is linear in the profile's
/// figures: running a variant once per parameter, with that parameter's operations at their estimates and every
/// other operation free, gives the figure's share of each parameter (its row of the design matrix). A fitted
/// profile scales each parameter's estimates by one factor; its figure is then the rows times the factors (what
/// ``project(_:_:profile:sizes:)`` checks on runs at three sizes).
public final class EvidenceFit {
    public let root: URL
    public let plan: EvidencePlan
    public let entries: [EvidenceEntry]
    public let estimates: CostProfile
    let progress: (@Sendable (String) -> Void)?
    private var scenarios: [String: [Scenario]] = [:]
    private var runs: [String: VariantResult] = [:]

    /// Loads the plan (`<evidence>/fit.yaml`), every entry and its scenario, and checks every variant an entry names.
    public init(root: URL, evidence: String = "Profiles/evidence", progress: (@Sendable (String) -> Void)? = nil) throws {
        self.root = root
        self.progress = progress
        let folder = root.appendingPathComponent(evidence, isDirectory: true)
        plan = try EvidencePlan.load(file: folder.appendingPathComponent("fit.yaml").path)
        entries = try EvidenceLoader.entries(in: folder)
        try plan.check(entries)
        estimates = try CostProfile.load(plan.estimates, root: root)
        for entry in entries {
            // A scenario that does not load, or a scale key it does not take, is the entry's error: at its line.
            let variants: [Scenario]
            do { variants = try scenarioVariants(entry.scenario, overrides: []) } catch {
                throw (entry.scenarioAt ?? EvidencePlace(field: "scenario")).fail(entry.file, "the scenario \(entry.scenario) does not load: \(error)")
            }
            try EvidenceLoader.checkVariants(entry, variants: variants.map(\.variantName))
            for (i, key) in entry.scale.enumerated() {
                do { _ = try scenarioVariants(entry.scenario, overrides: ["\(key)=1"]) } catch {
                    let place = entry.scaleAt.indices.contains(i) ? entry.scaleAt[i] : EvidencePlace(field: "scale")
                    throw place.fail(entry.file, "the scenario \(entry.scenario) does not take \(key) (set to 1 to run a figure at another size): \(error)")
                }
            }
        }
    }

    // MARK: Running

    func scenarioVariants(_ path: String, overrides: [String]) throws -> [Scenario] {
        let key = ([path] + overrides).joined(separator: "\u{1F}")
        if let cached = scenarios[key] { return cached }
        let file = path.hasPrefix("/") ? path : root.appendingPathComponent(path).path
        let variants = try ScenarioLoader.load(file: file, overrides: overrides).variants.filter { $0.repetition == 1 }
        scenarios[key] = variants
        return variants
    }

    /// The result of one variant of `entry`'s scenario under `profile` (`overrides` applied), run once per key.
    public func run(_ entry: EvidenceEntry, variant: String, profile: CostProfile, profileKey: String, overrides: [String] = []) throws -> VariantResult {
        let key = ([entry.scenario, variant, profileKey] + overrides).joined(separator: "\u{1F}")
        if let cached = runs[key] { return cached }
        guard var scenario = try scenarioVariants(entry.scenario, overrides: overrides).first(where: { $0.variantName == variant }) else {
            throw ScenarioError(file: entry.file, field: "variant", message: "no variant named '\(variant)' in \(entry.scenario)")
        }
        scenario.mode = .simulated
        progress?("\(entry.name): \(variant)\(overrides.isEmpty ? "" : " " + overrides.joined(separator: " ")) under \(profileKey)")
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("ambar-evidence-\(getpid())-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        var runner = VariantRunner(scenario: scenario, workDirectory: work)
        runner.costProfile = profile
        let result = try runner.run()
        runs[key] = result
        return result
    }

    /// A figure's workload run at another size: the entry's `scale` keys set to `size` (through the matrix when the
    /// figure's variant is a matrix value of that key).
    public func run(_ entry: EvidenceEntry, _ figure: EvidenceEntry.Figure, size: Int, profile: CostProfile) throws -> VariantResult {
        guard let original = figure.size, !entry.scale.isEmpty else {
            throw WorkbenchError(.badInput, "\(entry.file): figure '\(figure.name)' has no size, or the entry no scale keys, to run it at another size")
        }
        var overrides: [String] = []
        var variant = figure.variant
        for key in entry.scale {
            // A variant's name is its matrix values, `key=value` joined by ", ": match whole components only.
            var parts = variant.components(separatedBy: ", ")
            if let i = parts.firstIndex(of: "\(key)=\(original)") {
                overrides.append("matrix.\(key)=[\(size)]")
                parts[i] = "\(key)=\(size)"
                variant = parts.joined(separator: ", ")
            } else {
                overrides.append("\(key)=\(size)")
            }
        }
        return try run(entry, variant: variant, profile: profile, profileKey: "profile \(profile.name)", overrides: overrides)
    }

    /// A figure projected to its published size from runs at `sizes` (three, evenly spaced): the metric's value at
    /// the first size plus its slope, and whether every operation count grows by the same step from size to size
    /// (then the projection is exact in simulated mode).
    public struct Projection: Sendable {
        public var predicted: Double
        /// Operations whose counts do not grow linearly with the size, with their counts at the three sizes.
        public var nonlinear: [String]
        /// Their second differences priced by the profile, in the metric's unit: how far from a straight line.
        public var nonlinearTime: Double
        /// The metric's growth over the three sizes, in its unit.
        public var growth: Double
    }

    public func project(_ entry: EvidenceEntry, _ figure: EvidenceEntry.Figure, profile: CostProfile, sizes: [Int] = [20, 40, 60]) throws -> Projection {
        precondition(sizes.count == 3 && sizes[1] - sizes[0] == sizes[2] - sizes[1] && sizes[1] > sizes[0], "three evenly spaced sizes")
        let results = try sizes.map { try run(entry, figure, size: $0, profile: profile) }
        let values = try results.map { r -> Double in
            guard let v = Self.value(r, figure.of) else { throw WorkbenchError(.badInput, "\(entry.file): figure '\(figure.name)': the run has no \(figure.of.metric)") }
            return v
        }
        func counts(_ r: VariantResult) -> [String: Double] {
            var out: [String: Double] = [:]
            for m in r.metrics where m.metric == "costedOperations" && !m.label.hasPrefix("main:") { out[m.label] = m.value }
            return out
        }
        let c = results.map(counts)
        var nonlinear: [String] = []
        var nonlinearTime = 0.0
        for op in c[2].keys.sorted() {
            let v = c.map { $0[op] ?? 0 }
            if v[2] - v[1] != v[1] - v[0] {
                nonlinear.append("\(op) \(v.map { String(Int($0)) }.joined(separator: "/"))")
                if let costed = CostedOperation(name: op) { nonlinearTime += abs(v[2] - 2 * v[1] + v[0]) * Double(profile.cost(costed)) / 1e6 }
            }
        }
        let step = Double(sizes[1] - sizes[0])
        let slope = (values[2] - values[0]) / (2 * step)
        let size = Double(figure.size ?? sizes[0])
        return Projection(predicted: values[0] + slope * (size - Double(sizes[0])), nonlinear: nonlinear, nonlinearTime: nonlinearTime, growth: values[2] - values[0])
    }

    /// A figure's value in a run, in the metric's unit (ms for times, bytes for sizes).
    public static func value(_ result: VariantResult, _ ref: EvidenceEntry.Reference) -> Double? {
        let rows = result.metrics + result.host
        guard let row = rows.first(where: { $0.metric == ref.metric && $0.statistic == ref.statistic && $0.label == ref.label }) else { return nil }
        // Published times are compared in milliseconds; a metric reported in seconds is converted.
        return row.unit == "s" ? row.value * 1000 : row.value
    }

    /// The estimates with only `parameter`'s operations priced (every other operation free).
    func parameterProfile(_ parameter: Int) -> CostProfile {
        var p = estimates
        p.name = "\(estimates.name)[\(plan.parameters[parameter].name)]"
        for op in CostedOperation.allCases where !plan.parameters[parameter].operations.contains(op) { p.nanos[op.rawValue] = 0 }
        return p
    }

    /// A figure's share of each parameter at the estimates (its row of the design matrix), in the metric's unit.
    public func row(_ entry: EvidenceEntry, _ figure: EvidenceEntry.Figure, overrides: [String] = []) throws -> [Double] {
        try plan.parameters.indices.map { g in
            let result = try run(entry, variant: figure.variant, profile: parameterProfile(g), profileKey: "parameter \(plan.parameters[g].name)", overrides: overrides)
            guard let v = Self.value(result, figure.of) else {
                throw WorkbenchError(.badInput, "\(entry.file): figure '\(figure.name)': the run has no \(figure.of.metric) \(figure.of.statistic)\(figure.of.label.isEmpty ? "" : " [\(figure.of.label)]")")
            }
            return v
        }
    }

    // MARK: Fitting

    /// One data point: a published time and its row.
    public struct Point: Sendable {
        public var entry: String
        public var figure: String
        public var published: Double
        public var row: [Double]
    }

    /// What the fit says of one device.
    public struct DeviceFit: Sendable {
        public var device: String
        /// By parameter: its factor over the estimates.
        public var scales: [Double]
        /// By parameter: the standard error of a determined factor (infinite for the others).
        public var standardErrors: [Double]
        /// By parameter: nil when determined, else why not.
        public var undetermined: [String?]
        /// By parameter: the others it was fitted together with (one factor), when the figures cannot part them.
        public var together: [String?]
        /// The factors the figures determined (parameters fitted together count once).
        public var determinedCount: Int
        /// The geometric mean of the determined factors.
        public var deviceFactor: Double
        /// By parameter: how an undetermined one got its factor (nil for a determined one).
        public var assigned: [String?] = []
        public var points: [Point]
        /// Root mean square of the relative residuals.
        public var relativeResidual: Double
        public var entries: [String] {
            var names: [String] = []
            for p in points where !names.contains(p.entry) { names.append(p.entry) }
            return names
        }
    }

    /// The design matrix rows of every timed figure of the `fit` entries.
    public func fitPoints() throws -> [String: [Point]] {
        var byDevice: [String: [Point]] = [:]
        for entry in entries where entry.role == .fit {
            for figure in entry.figures where figure.unit.isTime {
                let point = Point(entry: entry.name, figure: figure.name, published: figure.unit.inMetricUnit(figure.value), row: try row(entry, figure))
                byDevice[entry.device, default: []].append(point)
            }
        }
        return byDevice
    }

    /// Fits the plan's parameters to `points` by non-negative least squares on relative residuals: each point's
    /// row and time divided by its published time, so a 3 s figure and a 30 ms one weigh alike.
    /// How an undetermined parameter's reason begins when the best fit gives it no time.
    static let leftNothing = "the best fit gives it no time (the figures leave it nothing"

    /// The relative error a published figure is taken to have at least (the residual variance's floor).
    public static let noise = 0.1
    /// The largest relative standard error of a factor still called determined.
    public static let maximumRelativeError = 0.5

    /// The inverse of a small symmetric matrix by Gauss-Jordan elimination, or nil when it is singular.
    static func invert(_ m: [[Double]]) -> [[Double]]? {
        let n = m.count
        var a = m.enumerated().map { i, row in row + (0..<n).map { $0 == i ? 1.0 : 0.0 } }
        let scale = (0..<n).map { abs(m[$0][$0]) }.max() ?? 0
        for col in 0..<n {
            guard let p = (col..<n).max(by: { abs(a[$0][col]) < abs(a[$1][col]) }), abs(a[p][col]) > max(scale, 1e-300) * 1e-12 else { return nil }
            a.swapAt(col, p)
            let pivot = a[col][col]
            for j in 0..<(2 * n) { a[col][j] /= pivot }
            for r in 0..<n where r != col && a[r][col] != 0 {
                let f = a[r][col]
                for j in 0..<(2 * n) { a[r][j] -= f * a[col][j] }
            }
        }
        return a.map { Array($0[n...]) }
    }

    public static func fit(device: String, points: [Point], parameters: [EvidencePlan.Parameter]) -> DeviceFit {
        let k = parameters.count
        func gramOf(_ rows: [[Double]], _ n: Int) -> (gram: [[Double]], rhs: [Double], used: [Int]) {
            var gram = [[Double]](repeating: [Double](repeating: 0, count: n), count: n)
            var rhs = [Double](repeating: 0, count: n), used = [Int](repeating: 0, count: n)
            for (p, row) in zip(points, rows) {
                let a = row.map { $0 / p.published }
                for i in 0..<n where a[i] != 0 {
                    used[i] += 1
                    rhs[i] += a[i]
                    for j in 0..<n { gram[i][j] += a[i] * a[j] }
                }
            }
            return (gram, rhs, used)
        }
        // Parameters that every figure does in the same proportions are one column: only their sum is determined,
        // so they share one factor (the estimates' ratio between them stays).
        let tied = ProfileFit.tiedOperations(gramOf(points.map(\.row), k).gram)
        var column = Array(0..<k)
        for _ in 0..<k {
            for i in 0..<k { for j in tied[i] ?? [] { column[i] = min(column[i], column[j]); column[j] = column[i] } }
        }
        let columns = Array(Set(column)).sorted()
        let c = columns.count
        let merged = points.map { p in columns.map { col in (0..<k).filter { column[$0] == col }.reduce(0.0) { $0 + p.row[$1] } } }
        let (gram, rhs, used) = gramOf(merged, c)
        var out = [String?](repeating: nil, count: c)
        for i in 0..<c where used[i] == 0 { out[i] = "no fitted figure exercises it" }
        // Solve for the columns still in; then drop the loosest if the figures leave it loose (its standard error,
        // from the inverse of the normal matrix, over its value, above `maximumRelativeError`), and solve again. The
        // residual variance is taken as at least `noise`²: a published figure is not known better than that.
        let start = [Double](repeating: 1, count: c)
        var solved = start
        var errors = [Double](repeating: .infinity, count: c)
        while true {
            var g2 = gram, r2 = rhs
            for j in 0..<c where out[j] != nil {
                for m in 0..<c { g2[j][m] = 0; g2[m][j] = 0 }
                r2[j] = 0
            }
            solved = NonNegativeLeastSquares.solve(gram: g2, rhs: r2, start: start, sweeps: 5000)
            for i in 0..<c where out[i] == nil && solved[i] <= 0 { out[i] = "\(Self.leftNothing))" }
            let inIdx = (0..<c).filter { out[$0] == nil }
            guard !inIdx.isEmpty else { break }
            guard let inverse = invert(inIdx.map { i in inIdx.map { gram[i][$0] } }) else {
                // The figures cannot part what is left: none of it is determined.
                for i in inIdx { out[i] = "the figures cannot part it from the others (a singular normal matrix)" }
                break
            }
            var squares = 0.0
            for (p, row) in zip(points, merged) {
                let predicted = inIdx.reduce(0.0) { $0 + row[$1] * solved[$1] }
                squares += pow(predicted / p.published - 1, 2)
            }
            let variance = max(squares / Double(max(points.count - inIdx.count, 1)), noise * noise)
            for (a, i) in inIdx.enumerated() { errors[i] = (variance * max(inverse[a][a], 0)).squareRoot() }
            guard let worst = inIdx.max(by: { errors[$0] / solved[$0] < errors[$1] / solved[$1] }),
                  errors[worst] / solved[worst] > maximumRelativeError else { break }
            out[worst] = "the figures leave it loose: ± \(Int((errors[worst] / solved[worst] * 100).rounded())) %"
        }
        let determined = (0..<c).filter { out[$0] == nil }
        let factor = determined.isEmpty ? 1 : exp(determined.map { log(solved[$0]) }.reduce(0, +) / Double(determined.count))
        var scales = [Double](repeating: factor, count: k), standardErrors = [Double](repeating: .infinity, count: k)
        var undetermined = [String?](repeating: nil, count: k), together = [String?](repeating: nil, count: k)
        for i in 0..<k {
            let col = columns.firstIndex(of: column[i])!
            let partners = (0..<k).filter { $0 != i && column[$0] == column[i] }.map { parameters[$0].name }
            if !partners.isEmpty { together[i] = "tied with \(partners.joined(separator: ", ")) in every fitted figure: fitted together, one factor" }
            if let why = out[col] {
                undetermined[i] = why
            } else {
                scales[i] = solved[col]
                standardErrors[i] = errors[col]
            }
        }
        var squares = 0.0
        for p in points {
            let predicted = zip(p.row, scales).reduce(0) { $0 + $1.0 * $1.1 }
            squares += pow(predicted / p.published - 1, 2)
        }
        return DeviceFit(device: device, scales: scales, standardErrors: standardErrors, undetermined: undetermined, together: together,
                         determinedCount: determined.count, deviceFactor: factor,
                         assigned: (0..<k).map { undetermined[$0] == nil ? nil : "the geometric mean of this device's determined factors, \(String(format: "%.4f", factor))" },
                         points: points,
                         relativeResidual: points.isEmpty ? 0 : (squares / Double(points.count)).squareRoot())
    }

    /// Each device's fit to its `fit` entries, by device name order.
    public func fitDevices(_ points: [String: [Point]]) -> [DeviceFit] {
        let own = points.keys.sorted().map { Self.fit(device: $0, points: points[$0]!, parameters: plan.parameters) }
        return own.map { Self.complete($0, others: own) }
    }

    /// A fit whose undetermined parameters take, each, the factor of another device that determined it, times this
    /// device's time ratio to that one (the geometric mean of their factors' ratios over the parameters both
    /// determine; above 1 when this device is slower). A parameter this device's figures leave no time is small here,
    /// not unknown: when this device is slower it takes the reference's own factor, the least a slower device can
    /// take. A parameter no other device determines keeps the geometric mean of this device's determined factors.
    /// The determined factors are then refitted with the others' time taken out, and the ratios taken again from the
    /// refitted factors, until they settle.
    static func complete(_ fit: DeviceFit, others: [DeviceFit]) -> DeviceFit {
        let missing = fit.scales.indices.filter { fit.undetermined[$0] != nil }
        guard !missing.isEmpty else { return fit }
        var completed = fit
        for _ in 0..<20 {
            var changed = false
            for g in missing {
                let candidates = others.filter { $0.device != fit.device && $0.undetermined[g] == nil }.compactMap { other -> (DeviceFit, [Int])? in
                    let shared = fit.scales.indices.filter { fit.undetermined[$0] == nil && other.undetermined[$0] == nil }
                    return shared.isEmpty ? nil : (other, shared)
                }
                guard let (reference, shared) = candidates.max(by: { ($0.1.count, $0.0.determinedCount, $1.0.device) < ($1.1.count, $1.0.determinedCount, $0.0.device) }) else {
                    completed.assigned[g] = "the geometric mean of this device's determined factors, \(String(format: "%.4f", fit.deviceFactor)) (no other device determines it)"
                    continue
                }
                let ratio = exp(shared.map { log(completed.scales[$0] / reference.scales[$0]) }.reduce(0, +) / Double(shared.count))
                let leftNothing = fit.undetermined[g]?.hasPrefix(Self.leftNothing) == true
                let floored = leftNothing && ratio >= 1
                let scale = reference.scales[g] * (floored ? 1 : ratio)
                if abs(scale - completed.scales[g]) > 1e-9 * max(scale, 1) { changed = true }
                completed.scales[g] = scale
                completed.assigned[g] = floored
                    ? "\(reference.device)'s factor: the least a device \(String(format: "%.2f", ratio))x slower than \(reference.device) can take"
                    : "\(reference.device)'s factor times this device's time ratio to it, \(String(format: "%.3f", ratio)) (the geometric mean of their factors' ratios over the \(shared.count) parameters both determine)"
            }
            completed = refitWithOffsets(completed)
            if !changed { break }
        }
        return completed
    }

    /// The determined factors fitted again with the undetermined parameters' time, at their assigned factors, taken
    /// out of each figure first: a figure's time is then shared the way the profile will price it.
    static func refitWithOffsets(_ fit: DeviceFit) -> DeviceFit {
        let k = fit.scales.count
        let free = (0..<k).filter { fit.undetermined[$0] == nil }
        guard !free.isEmpty else { return fit }
        var gram = [[Double]](repeating: [Double](repeating: 0, count: k), count: k)
        var rhs = [Double](repeating: 0, count: k)
        for p in fit.points {
            let offset = (0..<k).filter { fit.undetermined[$0] != nil }.reduce(0.0) { $0 + p.row[$1] * fit.scales[$1] } / p.published
            let a = p.row.map { $0 / p.published }
            for i in free where a[i] != 0 {
                rhs[i] += a[i] * (1 - offset)
                for j in free { gram[i][j] += a[i] * a[j] }
            }
        }
        let solved = NonNegativeLeastSquares.solve(gram: gram, rhs: rhs, start: fit.scales, sweeps: 5000)
        var refitted = fit
        for i in free where solved[i] > 0 { refitted.scales[i] = solved[i] }
        var squares = 0.0
        for p in fit.points { squares += pow(predict(p.row, refitted.scales) / p.published - 1, 2) }
        refitted.relativeResidual = fit.points.isEmpty ? 0 : (squares / Double(fit.points.count)).squareRoot()
        return refitted
    }

    /// The predicted figure for a row under factors.
    public static func predict(_ row: [Double], _ scales: [Double]) -> Double {
        zip(row, scales).reduce(0) { $0 + $1.0 * $1.1 }
    }

    /// Leave-one-out: for each `fit` entry, its device refitted without it (and completed from the other devices, as
    /// the fit is), and each of its figures predicted. An entry whose device has no other figure is predicted by the
    /// default profile's factors, from the other devices' fits.
    public struct LeftOut: Sendable {
        public var entry: String
        public var figure: String
        public var published: Double
        public var predicted: Double
        /// How it was predicted: the device refitted, or the default.
        public var by: String
    }

    public func leaveOneOut(_ points: [String: [Point]]) -> [LeftOut] {
        var out: [LeftOut] = []
        for entry in entries where entry.role == .fit && entry.isTimed {
            let devicePoints = points[entry.device] ?? []
            let kept = devicePoints.filter { $0.entry != entry.name }
            let left = devicePoints.filter { $0.entry == entry.name }
            var scales: [Double]
            var by: String
            if kept.isEmpty {
                // No other figure of its device: the default, from its own source device refitted without the entry.
                var refitted = points
                refitted[entry.device] = nil
                for (d, ps) in refitted { refitted[d] = ps.filter { $0.entry != entry.name } }
                let fits = fitDevices(refitted.filter { !$0.value.isEmpty })
                (scales, by) = defaultScales(fits) ?? ([Double](repeating: 1, count: plan.parameters.count), "the estimates")
            } else {
                let others = fitDevices(points.filter { $0.key != entry.device }.mapValues { $0.filter { $0.entry != entry.name } }.filter { !$0.value.isEmpty })
                let fit = Self.complete(Self.fit(device: entry.device, points: kept, parameters: plan.parameters), others: others)
                scales = fit.scales
                by = "\(entry.device) refitted to \(fit.points.count) figures"
            }
            for p in left {
                out.append(LeftOut(entry: entry.name, figure: p.figure, published: p.published, predicted: Self.predict(p.row, scales), by: by))
            }
        }
        return out
    }

    /// The default profile's factors over the estimates, when it is derived from a fitted device.
    func defaultScales(_ fits: [DeviceFit]) -> ([Double], String)? {
        if let fit = fits.first(where: { $0.device == plan.defaultProfile }) { return (fit.scales, plan.defaultProfile) }
        guard let d = plan.derived.first(where: { $0.name == plan.defaultProfile }), let fit = fits.first(where: { $0.device == d.from }) else { return nil }
        return (fit.scales.map { $0 * d.factor }, "\(d.name) (\(d.from) × \(d.factor))")
    }
}
