import Foundation

/// A published measurement a scenario replays (issue 19 item 12; workbench `published:`): where it comes from,
/// the figure it reports and the directions it shows between stacks or settings.
public struct PublishedResult: Sendable, Codable, Equatable {
    /// A metric of one variant (`metric`, `statistic`, `label`), as the report names them.
    public struct Reference: Sendable, Codable, Equatable {
        public var metric: String
        public var statistic: String
        public var label: String = ""
    }
    /// The published number, and the variant of ours that stands for the published setup.
    public struct Figure: Sendable, Codable, Equatable {
        public var of: Reference
        public var variant: String
        public var value: Double
        public var unit: String
    }
    /// "`larger`'s metric is at least `factor` times `smaller`'s": an ordering the publication shows.
    public struct Direction: Sendable, Codable, Equatable {
        public var claim: String
        public var of: Reference
        public var larger: String
        public var smaller: String
        public var factor: Double = 1
    }

    public var source: String
    /// The published result in words.
    public var result: String
    /// Whether the cost profile in use was fitted to this very result (its figure then proves nothing).
    public var profileFittedToIt: Bool = false
    public var figure: Figure?
    public var directions: [Direction] = []
}

/// How a run compares with the publication it replays.
public struct PublishedComparison: Sendable, Codable, Equatable {
    public struct FigureOutcome: Sendable, Codable, Equatable {
        public var published: Double
        public var ours: Double?
        public var unit: String
        /// ours / published.
        public var ratio: Double?
    }
    public struct DirectionOutcome: Sendable, Codable, Equatable {
        public var claim: String
        public var larger: Double?
        public var smaller: Double?
        public var holds: Bool
    }
    public var source: String
    public var result: String
    public var profileFittedToIt: Bool
    public var figure: FigureOutcome?
    public var directions: [DirectionOutcome]

    /// Compares the first repetition of each named variant with the publication.
    public static func evaluate(_ published: PublishedResult, results: [VariantResult]) -> PublishedComparison {
        func value(_ variant: String, _ ref: PublishedResult.Reference) -> Double? {
            results.first { $0.variant == variant && $0.repetition == 1 }?.value(ref.metric, ref.statistic, label: ref.label)
        }
        let figure = published.figure.map { f -> FigureOutcome in
            let ours = value(f.variant, f.of)
            return FigureOutcome(published: f.value, ours: ours, unit: f.unit, ratio: ours.map { f.value != 0 ? $0 / f.value : .nan })
        }
        let directions = published.directions.map { d -> DirectionOutcome in
            let (l, s) = (value(d.larger, d.of), value(d.smaller, d.of))
            return DirectionOutcome(claim: d.claim, larger: l, smaller: s, holds: l.flatMap { l in s.map { l > $0 * d.factor } } ?? false)
        }
        return PublishedComparison(source: published.source, result: published.result, profileFittedToIt: published.profileFittedToIt,
                                   figure: figure, directions: directions)
    }

    /// One line per finding, for the terminal.
    public var lines: [String] {
        var lines: [String] = []
        if let f = figure {
            let ours = f.ours.map { CSVOutput.number($0) } ?? "missing"
            let ratio = f.ratio.map { String(format: "%.2f×", $0) } ?? "–"
            lines.append("published \(CSVOutput.number(f.published)) \(f.unit), ours \(ours) \(f.unit): \(ratio)\(profileFittedToIt ? " (the profile was fitted to this result)" : "")")
        }
        for d in directions { lines.append("direction \(d.holds ? "holds" : "DOES NOT HOLD"): \(d.claim)") }
        return lines
    }
}
