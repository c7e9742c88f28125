import Foundation

/// Non-negative least squares on the normal equations (`gram` = AᵀA, `rhs` = Aᵀy) by coordinate descent, from
/// `start`: the solver shared by `ambar-bench calibrate`'s in-situ fit and the Core Data profile fit
/// (``ProfileFit``). Columns whose diagonal is 0 (an operation no sample has) keep their start value.
public enum NonNegativeLeastSquares {
    public static func solve(gram: [[Double]], rhs: [Double], start: [Double], sweeps: Int = 2000) -> [Double] {
        var x = start
        let k = rhs.count
        for _ in 0..<sweeps {
            for i in 0..<k where gram[i][i] > 0 {
                var residual = rhs[i]
                for j in 0..<k { residual -= gram[i][j] * x[j] }
                x[i] = max(0, x[i] + residual / gram[i][i])
            }
        }
        return x
    }

    /// `x` (a point of `solve`) moved to the exact least-squares minimum on its face: the normal equations
    /// restricted to its positive coordinates, solved by elimination. Coordinate descent crawls when columns are
    /// nearly collinear (fetches of 1,000 and 1,010 rows); this lands where it was heading. A coordinate whose
    /// column depends on the others' (only their combined cost is known) keeps its value from `x`; the result is
    /// `x` itself unless the minimum is positive everywhere and no worse.
    public static func polished(_ x: [Double], gram: [[Double]], rhs: [Double]) -> [Double] {
        let k = rhs.count
        var free = (0..<k).filter { x[$0] > 0 && gram[$0][$0] > 0 }
        while !free.isEmpty {
            let n = free.count
            var a = free.map { i in free.map { gram[i][$0] } }
            var b = free.map { i in (0..<k).filter { !free.contains($0) }.reduce(rhs[i]) { $0 - gram[i][$1] * x[$1] } }
            let tolerance = (free.map { gram[$0][$0] }.max() ?? 0) * 1e-9
            var dependent: Int?
            for col in 0..<n {
                let p = (col..<n).max { abs(a[$0][col]) < abs(a[$1][col]) }!
                guard abs(a[p][col]) > tolerance else { dependent = col; break }
                a.swapAt(col, p)
                b.swapAt(col, p)
                for r in (col + 1)..<n {
                    let f = a[r][col] / a[col][col]
                    for j in col..<n { a[r][j] -= f * a[col][j] }
                    b[r] -= f * b[col]
                }
            }
            if let dependent {
                free.remove(at: dependent)
                continue
            }
            var z = [Double](repeating: 0, count: n)
            for r in stride(from: n - 1, through: 0, by: -1) {
                z[r] = ((r + 1)..<n).reduce(b[r]) { $0 - a[r][$1] * z[$1] } / a[r][r]
            }
            guard z.allSatisfy({ $0 > 0 && $0.isFinite }) else { return x }
            var y = x
            for (i, column) in free.enumerated() { y[column] = z[i] }
            return objective(y, gram: gram, rhs: rhs) <= objective(x, gram: gram, rhs: rhs) ? y : x
        }
        return x
    }

    /// ½ xᵀ·gram·x − rhsᵀ·x: the squared residual, up to a constant and a factor.
    static func objective(_ x: [Double], gram: [[Double]], rhs: [Double]) -> Double {
        var value = 0.0
        for i in x.indices {
            value -= rhs[i] * x[i]
            for j in x.indices { value += 0.5 * x[i] * gram[i][j] * x[j] }
        }
        return value
    }
}

/// Fits a cost profile (nanoseconds per operation, Profiles/README.md) to steps measured on a device: each step's
/// time there against the operations our run counted for the same call (the trace's per-record counts), by
/// non-negative least squares (Docs/calibration.md "The fitted profile"). A figure the steps cannot determine is
/// not written: an operation no step (or too few) did, or one that always came with others in the same
/// proportions, so that only their sum is known.
public enum ProfileFit {
    /// One measured step: the operations our run counted for it, and the time it took on the device.
    public struct Sample: Codable, Sendable, Equatable {
        public var counts: [String: Int]
        public var nanoseconds: Double
        public init(counts: [String: Int], nanoseconds: Double) { (self.counts, self.nanoseconds) = (counts, nanoseconds) }
    }

    /// What the fit says of one operation.
    public enum Figure: Equatable, Sendable {
        /// Determined: its cost and the number of steps that did it.
        case fitted(nanoseconds: Double, steps: Int)
        /// Not determined, and why.
        case undetermined(String)
    }

    public struct Result: Sendable, Equatable {
        /// By operation, for every operation asked for.
        public var figures: [String: Figure]
        /// The steps fitted (those with at least one of the operations).
        public var steps: Int
        /// Root mean square of the residuals over the root mean square of the times (0 is a perfect fit).
        public var relativeResidual: Double
    }

    /// Fits `operations` (in the order given) to `samples`. An operation is determined when at least
    /// `minimumSteps` steps did it and no combination of the others' counts reproduces its counts (the design
    /// matrix's null space does not touch it).
    /// `step` names a sample in the reasons given (a fetch, a transaction).
    public static func fit(_ samples: [Sample], operations: [String], minimumSteps: Int = 3, step: String = "step") -> Result {
        let k = operations.count
        let used = samples.filter { s in operations.contains { s.counts[$0, default: 0] != 0 } }
        var gram = [[Double]](repeating: [Double](repeating: 0, count: k), count: k)
        var rhs = [Double](repeating: 0, count: k)
        var seen = [Int](repeating: 0, count: k)
        for s in used {
            let row = operations.map { Double(s.counts[$0, default: 0]) }
            for i in 0..<k where row[i] != 0 {
                seen[i] += 1
                rhs[i] += row[i] * s.nanoseconds
                for j in 0..<k where row[j] != 0 { gram[i][j] += row[i] * row[j] }
            }
        }
        let tied = tiedOperations(gram)
        let descended = NonNegativeLeastSquares.solve(gram: gram, rhs: rhs, start: [Double](repeating: 0, count: k))
        let cost = NonNegativeLeastSquares.polished(descended, gram: gram, rhs: rhs)
        var figures: [String: Figure] = [:]
        for (i, op) in operations.enumerated() {
            if seen[i] == 0 {
                figures[op] = .undetermined("no \(step) did it")
            } else if seen[i] < minimumSteps {
                figures[op] = .undetermined("only \(seen[i]) \(step)\(seen[i] == 1 ? "" : "s") did it (at least \(minimumSteps) needed)")
            } else if let others = tied[i] {
                let names = others.map { operations[$0] }
                figures[op] = .undetermined("its counts are a combination of \(names.joined(separator: ", "))'s in every \(step): only their combined cost is determined")
            } else {
                figures[op] = .fitted(nanoseconds: cost[i], steps: seen[i])
            }
        }
        var squares = 0.0, total = 0.0
        for s in used {
            let predicted = operations.enumerated().reduce(0.0) { $0 + Double(s.counts[$1.element, default: 0]) * cost[$1.offset] }
            squares += (s.nanoseconds - predicted) * (s.nanoseconds - predicted)
            total += s.nanoseconds * s.nanoseconds
        }
        return Result(figures: figures, steps: used.count, relativeResidual: total > 0 ? (squares / total).squareRoot() : 0)
    }

    /// For each operation that a null vector of the Gram matrix touches, the other operations in that vector
    /// (nil for a determined operation). Gauss-Jordan elimination with a relative tolerance.
    public static func tiedOperations(_ gram: [[Double]]) -> [[Int]?] {
        let k = gram.count
        var m = gram
        let scale = (0..<k).map { gram[$0][$0] }.max() ?? 0
        let tolerance = max(scale, 1) * 1e-9
        var pivotColumns: [Int] = []
        var row = 0
        for col in 0..<k where row < k {
            guard let p = (row..<k).max(by: { abs(m[$0][col]) < abs(m[$1][col]) }), abs(m[p][col]) > tolerance else { continue }
            m.swapAt(row, p)
            let pivot = m[row][col]
            for j in 0..<k { m[row][j] /= pivot }
            for r in 0..<k where r != row && m[r][col] != 0 {
                let f = m[r][col]
                for j in 0..<k { m[r][j] -= f * m[row][j] }
            }
            pivotColumns.append(col)
            row += 1
        }
        var tied = [[Int]?](repeating: nil, count: k)
        // One null vector per free column f: x_f = 1, x_pivot(r) = -m[r][f].
        for f in 0..<k where !pivotColumns.contains(f) && gram[f][f] > 0 {
            var members = [f]
            for (r, c) in pivotColumns.enumerated() where abs(m[r][f]) > 1e-9 { members.append(c) }
            for i in members {
                let others = members.filter { $0 != i }
                tied[i] = Array(Set((tied[i] ?? []) + others)).sorted()
            }
        }
        return tied
    }

    /// The profile as a file in the profile format (Profiles/README.md "Writing a profile"): each determined
    /// figure labelled as measured on `device` and `os` with its number of steps; the undetermined ones listed in
    /// a comment and, when `fallback` gives them a figure, written with that figure marked an estimate taken from
    /// elsewhere (a profile loads only when every operation has a cost).
    public static func yaml(_ result: Result, operations: [String], device: String, os: String, traces: String,
                            fallback: (name: String, costs: [String: Double])? = nil) -> String {
        func quoted(_ s: String) -> String { "\"" + s.replacingOccurrences(of: "\"", with: "'") + "\"" }
        let undetermined = operations.filter { if case .undetermined = result.figures[$0] { return true } else { return false } }
        var text = "# Cost profile fitted by ambar-calibrate on \(device), \(os): the time of each replayed step of \(traces) on Apple's\n"
        text += "# Core Data against the operations our run counted for it, by non-negative least squares over \(result.steps) steps\n"
        text += "# (relative residual \(String(format: "%.3f", result.relativeResidual))). Docs/calibration.md \"The fitted profile\".\n"
        if !undetermined.isEmpty {
            text += "# NOT determined by these steps (no figure of this fit is written for them):\n"
            for op in undetermined {
                if case .undetermined(let why)? = result.figures[op] { text += "#   \(op): \(why)\n" }
            }
            if fallback == nil { text += "# This file loads as a profile only once each of them has a figure (mark it estimated and name its source).\n" }
        }
        text += "description: \(quoted("Core Data on \(device), \(os), fitted to replayed operation traces by ambar-calibrate."))\n"
        text += "fittedTo: \(quoted("\(result.steps) steps of \(traces) replayed on \(device), \(os) (measured)"))\n"
        text += "costs:\n"
        for op in operations {
            switch result.figures[op] {
            case .fitted(let ns, let steps)?:
                let value = Int(min(ns, 1e9).rounded())
                text += "  \(op): { ns: \(value), estimated: false, source: \(quoted("measured on \(device), \(os): fitted to \(steps) steps (non-negative least squares)")) }\n"
            case .undetermined(let why)?:
                guard let fallback, let ns = fallback.costs[op] else { continue }
                text += "  \(op): { ns: \(Int(ns.rounded())), estimated: true, source: \(quoted("NOT determined on \(device) (\(why)): the figure of \(fallback.name), not measured here")) }\n"
            case nil:
                continue
            }
        }
        return text
    }

    /// The figures of a profile file written in the shipped shape (`  name: { ns: 4000, … }` per line): what
    /// ``yaml(_:operations:device:os:traces:fallback:)`` can fall back on without a YAML reader.
    /// In the file's order (the operations' order in a shipped profile).
    public static func figures(inProfile text: String) -> [(name: String, ns: Double)] {
        var out: [(name: String, ns: Double)] = []
        for line in text.split(separator: "\n") {
            let trimmed = line.drop(while: { $0 == " " })
            guard !trimmed.hasPrefix("#"), let colon = trimmed.firstIndex(of: ":"),
                  let ns = trimmed.range(of: "{ ns: ") else { continue }
            let name = String(trimmed[..<colon])
            let number = trimmed[ns.upperBound...].prefix(while: { $0.isNumber || $0 == "." })
            if let v = Double(number) { out.append((name, v)) }
        }
        return out
    }
}
