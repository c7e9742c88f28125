import Foundation
import ObjectGraph

extension EvidenceFit {
    /// How a profile does on one entry.
    public struct Judgement: Sendable {
        public struct FigureRow: Sendable {
            public var entry: String
            public var figure: String
            public var profile: String
            /// In the figure's own unit.
            public var published: Double
            public var ours: Double?
            public var unit: EvidenceEntry.Unit
            public var ratio: Double? { ours.map { $0 / published } }
            public var withinTwice: Bool { ratio.map { $0 <= 2 && $0 >= 0.5 } ?? false }
            public var direction: String {
                guard let ratio else { return "missing" }
                return ratio > 1 ? "ours slower" : ratio < 1 ? "ours faster" : "equal"
            }
        }
        public struct RatioRow: Sendable {
            public var entry: String
            public var claim: String
            public var published: Double
            public var ours: Double?
            /// Ours is on the published side of 1 (the same direction).
            public var sameDirection: Bool { ours.map { ($0 > 1) == (published > 1) } ?? false }
        }
        public struct DirectionRow: Sendable {
            public var entry: String
            public var claim: String
            public var holds: Bool
        }
        public var role: EvidenceEntry.Role
        public var figures: [FigureRow] = []
        public var ratios: [RatioRow] = []
        public var directions: [DirectionRow] = []
    }

    /// The profile an entry is judged with: its device's, else (when its device has no profile file) the plan's
    /// default. A profile file that exists but does not load is an error naming it.
    public func profile(for entry: EvidenceEntry, profiles: [String: CostProfile]) throws -> CostProfile {
        if let p = profiles[entry.device] { return p }
        if let p = try CostProfile.loadIfPresent(entry.device, root: root) { return p }
        return try profiles[plan.defaultProfile] ?? CostProfile.load(plan.defaultProfile, root: root)
    }

    /// Runs every entry (`roles`) under its profile and compares.
    public func judge(profiles: [String: CostProfile], roles: [EvidenceEntry.Role] = [.fit, .check], timedOnly: Bool = false) throws -> [Judgement] {
        var out: [Judgement] = []
        for role in roles {
            var j = Judgement(role: role)
            for entry in entries where entry.role == role && (!timedOnly || entry.isTimed) {
                let profile = try profile(for: entry, profiles: profiles)
                func result(_ variant: String) throws -> VariantResult {
                    try run(entry, variant: variant, profile: profile, profileKey: "profile \(profile.name)")
                }
                for f in entry.figures where !timedOnly || f.unit.isTime {
                    let ours = try Self.value(result(f.variant), f.of).map { $0 / f.unit.inMetricUnit(1) }
                    j.figures.append(.init(entry: entry.name, figure: f.name, profile: profile.name, published: f.value, ours: ours, unit: f.unit))
                }
                guard !timedOnly else { continue }
                for r in entry.ratios {
                    let (l, s) = (try Self.value(result(r.larger), r.of), try Self.value(result(r.smaller), r.of))
                    j.ratios.append(.init(entry: entry.name, claim: r.claim, published: r.value, ours: l.flatMap { l in s.map { $0 > 0 ? l / $0 : .infinity } }))
                }
                for d in entry.directions {
                    let (l, s) = (try Self.value(result(d.larger), d.of), try Self.value(result(d.smaller), d.of))
                    j.directions.append(.init(entry: entry.name, claim: d.claim, holds: l.flatMap { l in s.map { l > $0 * d.factor } } ?? false))
                }
            }
            out.append(j)
        }
        return out
    }

    // MARK: Text

    static func number(_ v: Double) -> String {
        if v == 0 { return "0" }
        let a = abs(v)
        if a >= 100 { return String(format: "%.0f", v) }
        if a >= 10 { return String(format: "%.1f", v) }
        if a >= 1 { return String(format: "%.2f", v) }
        return String(format: "%.3g", v)
    }

    static func table(_ header: [String], _ rows: [[String]]) -> String {
        var widths = header.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in i == 0 || i == 1 ? c.padding(toLength: widths[i], withPad: " ", startingAt: 0) : String(repeating: " ", count: widths[i] - c.count) + c }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        return ([line(header), widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")] + rows.map(line)).joined(separator: "\n")
    }

    /// A judgement as text: figures (published, ours, ratio, within 2×, direction), ratios and directions.
    public static func text(_ j: Judgement) -> String {
        var parts: [String] = []
        if !j.figures.isEmpty {
            let rows = j.figures.map { f -> [String] in
                [f.entry, f.figure, f.profile, "\(number(f.published)) \(f.unit.rawValue)", f.ours.map { "\(number($0)) \(f.unit.rawValue)" } ?? "missing",
                 f.ratio.map { String(format: "%.2f×", $0) } ?? "–", f.withinTwice ? "yes" : "NO", f.direction]
            }
            parts.append(table(["entry", "figure", "profile", "published", "ours", "ours/published", "within 2×", "direction"], rows))
            let within = j.figures.filter(\.withinTwice).count
            parts.append("within 2×: \(within) of \(j.figures.count)")
        }
        if !j.ratios.isEmpty {
            let rows = j.ratios.map { r -> [String] in
                [r.entry, r.claim, String(format: "%.2f×", r.published), r.ours.map { String(format: "%.2f×", $0) } ?? "missing", r.sameDirection ? "holds" : "DOES NOT HOLD"]
            }
            parts.append(table(["entry", "ratio", "published", "ours", "direction"], rows))
        }
        if !j.directions.isEmpty {
            parts.append(table(["entry", "claim", "direction"], j.directions.map { [$0.entry, $0.claim, $0.holds ? "holds" : "DOES NOT HOLD"] }))
        }
        return parts.joined(separator: "\n\n")
    }

    public static func text(_ left: [LeftOut], units: [String: EvidenceEntry.Unit]) -> String {
        let rows = left.map { l -> [String] in
            let unit = units["\(l.entry)/\(l.figure)"] ?? .ms
            let scale = unit.inMetricUnit(1)
            let ratio = l.predicted / l.published
            return [l.entry, l.figure, "\(number(l.published / scale)) \(unit.rawValue)", "\(number(l.predicted / scale)) \(unit.rawValue)",
                    String(format: "%.2f×", ratio), ratio <= 2 && ratio >= 0.5 ? "yes" : "NO", l.by]
        }
        let within = left.filter { $0.predicted / $0.published <= 2 && $0.predicted / $0.published >= 0.5 }.count
        return table(["entry", "figure", "published", "predicted", "ratio", "within 2×", "predicted by"], rows) + "\nwithin 2×: \(within) of \(left.count)"
    }

    /// Each device fit: its factors, what determined them and what did not.
    public func text(_ fit: DeviceFit) -> String {
        var lines = ["\(fit.device): \(fit.determinedCount) factors for \(plan.parameters.count) parameters determined by \(fit.points.count) figures of \(fit.entries.count) entries (\(fit.entries.joined(separator: ", "))); relative residual \(String(format: "%.3f", fit.relativeResidual))"]
        for (g, p) in plan.parameters.enumerated() {
            var how = fit.undetermined[g].map { "NOT determined (\($0)): \(factorText(fit, g))" } ?? "fitted, ± \(String(format: "%.3f", fit.standardErrors[g]))"
            if let together = fit.together[g] { how += "; \(together)" }
            lines.append("  \(p.name.padding(toLength: 14, withPad: " ", startingAt: 0)) × \(String(format: "%.3f", fit.scales[g]))  \(how)")
        }
        return lines.joined(separator: "\n")
    }

    /// The units of the fit entries' figures, by `entry/figure`.
    public var figureUnits: [String: EvidenceEntry.Unit] {
        var units: [String: EvidenceEntry.Unit] = [:]
        for e in entries { for f in e.figures { units["\(e.name)/\(f.name)"] = f.unit } }
        return units
    }
}
