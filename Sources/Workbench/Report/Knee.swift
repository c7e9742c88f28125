import Foundation

/// Where a sweep's thresholds are first missed (a scenario's `knee:`, Docs/scenarios.md "knee"): along one numeric
/// matrix key, for each combination of the other matrix keys, the smallest value whose variant misses a threshold
/// and the largest smaller value whose variant meets them all.
public struct Knee: Sendable, Codable, Equatable {
    /// The matrix key path the sweep varies (e.g. `phases.run.importer.chunkSize`).
    public var key: String
    /// What missing the thresholds means, as the sentence's subject and verb (e.g. "The main queue first misses a
    /// 60 Hz frame").
    public var says: String

    public static let defaultSays = "The thresholds are first missed"

    public init(key: String, says: String = Knee.defaultSays) {
        (self.key, self.says) = (key, says)
    }

    /// One sentence per group of other-key combinations with the same edge, in the order the results ran.
    /// A variant meets the thresholds when every threshold of every repetition is met.
    public func sentences(_ results: [VariantResult]) -> [String] {
        let name = Self.leaf(key)
        // Per combination of the other keys: each value of `key` and whether it met every threshold.
        var combinations: [[String]] = []
        var outcomes: [[String]: [(value: String, number: Double, met: Bool)]] = [:]
        for r in results {
            guard let value = r.parameters[key], let number = Double(value) else { continue }
            let others = r.parameters.keys.filter { $0 != key }.sorted().map { "\(Self.leaf($0)) \(r.parameters[$0]!)" }
            let met = r.thresholds.allSatisfy(\.passed)
            if outcomes[others] == nil { combinations.append(others) }
            if let i = outcomes[others]?.firstIndex(where: { $0.value == value }) {
                outcomes[others]![i].met = outcomes[others]![i].met && met
            } else {
                outcomes[others, default: []].append((value, number, met))
            }
        }
        // Combinations with the same edge share a sentence.
        var edges: [String] = []
        var groups: [String: [String]] = [:]
        for others in combinations {
            let sweep = outcomes[others]!.sorted { $0.number < $1.number }
            let edge: String
            if let first = sweep.firstIndex(where: { !$0.met }) {
                edge = first == 0
                    ? "\(says) at \(name) \(sweep[first].value), the smallest tried"
                    : "\(says) at \(name) \(sweep[first].value)|\(name) \(sweep[first - 1].value) stays within"
            } else {
                edge = "No variant misses a threshold|\(name) up to \(sweep.last!.value) stays within"
            }
            if groups[edge] == nil { edges.append(edge) }
            groups[edge, default: []].append(others.joined(separator: ", "))
        }
        return edges.map { edge in
            let parts = edge.split(separator: "|", maxSplits: 1).map(String.init)
            let named = groups[edge]!.filter { !$0.isEmpty }
            // One other key: "visibleObjects 20, 200 and 2000".
            let single = named.map { $0.split(separator: " ", maxSplits: 1).map(String.init) }
            let place = named.isEmpty ? ""
                : !named.contains(where: { $0.contains(",") }) && Set(single.map(\.[0])).count == 1 && single.allSatisfy({ $0.count == 2 })
                    ? " (\(single[0][0]) \(Self.list(single.map(\.[1]))))"
                    : " (\(Self.list(named)))"
            return parts[0] + place + (parts.count > 1 ? ": \(parts[1])." : ".")
        }
    }

    static func leaf(_ path: String) -> String { String(path.split(separator: ".").last ?? Substring(path)) }

    static func list(_ items: [String]) -> String {
        items.count <= 1 ? items.joined() : items.dropLast().joined(separator: items.contains { $0.contains(",") } ? "; " : ", ") + " and " + items.last!
    }
}
