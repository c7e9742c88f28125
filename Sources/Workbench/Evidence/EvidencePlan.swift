import Foundation
import ObjectGraph

/// The shape of the evidence fit (`Profiles/evidence/fit.yaml`, Profiles/README.md "How the fit works"): the
/// profile of estimates whose ratios are kept, the parameters (groups of operations scaled together), and the
/// profiles derived from a fitted one by a published device factor.
public struct EvidencePlan: Sendable, Equatable {
    /// Operations whose figures move together: the fit scales all of them by one factor, keeping the estimates'
    /// ratios between them (the evidence cannot tell them apart).
    public struct Parameter: Sendable, Equatable {
        public var name: String
        /// What the parameter stands for, in a few words.
        public var what: String
        public var operations: [CostedOperation]
    }

    /// A profile made from a fitted one by one device factor from a published source.
    public struct Derived: Sendable, Equatable {
        public var name: String
        /// The fitted profile it is made from.
        public var from: String
        /// Time on the derived device over time on `from`'s device.
        public var factor: Double
        /// The factor's range over the published sources (its uncertainty).
        public var low: Double
        public var high: Double
        public var description: String
        /// Where the factor comes from (benchmark, version, both scores, addresses).
        public var source: String
    }

    /// The profile of estimates (`Profiles/<estimates>.yaml`): every figure before the fit.
    public var estimates: String
    public var parameters: [Parameter]
    public var derived: [Derived]
    /// The profile entries are judged against when their device has no profile of its own.
    public var defaultProfile: String

    public static func load(file: String) throws -> EvidencePlan {
        try load(text: try ScenarioLoader.readScenarioText(file), file: file)
    }

    public static func load(text: String, file: String) throws -> EvidencePlan {
        let tree = try YAMLTree.parse(text, file: file)
        let r = Reader(file: file)
        let root = Reader.Node(tree: tree, path: "")
        _ = try r.keys(root, allowed: ["estimates", "default", "parameters", "derived"], required: ["estimates", "default", "parameters"])
        var seen: [CostedOperation: String] = [:]
        let parameters = try r.list(r.child(root, "parameters")!).map { n -> Parameter in
            _ = try r.keys(n, allowed: ["name", "what", "operations"], required: ["name", "what", "operations"])
            let name = try r.string(r.child(n, "name")!)
            let ops = try r.list(r.child(n, "operations")!).map { o -> CostedOperation in
                let opName = try r.string(o)
                guard let op = CostedOperation(name: opName) else {
                    throw r.fail(o, "unknown operation '\(opName)'; expected one of \(CostedOperation.allCases.map(\.name).joined(separator: ", "))")
                }
                if let other = seen[op] { throw r.fail(o, "\(opName) is already in parameter \(other): an operation belongs to one parameter") }
                seen[op] = name
                return op
            }
            guard !ops.isEmpty else { throw r.fail(n, "a parameter scales at least one operation") }
            return Parameter(name: name, what: try r.string(r.child(n, "what")!), operations: ops)
        }
        let missing = CostedOperation.allCases.filter { seen[$0] == nil }.map(\.name)
        guard missing.isEmpty else {
            throw r.fail(r.child(root, "parameters")!, "every operation belongs to a parameter; none has \(missing.joined(separator: ", "))")
        }
        let derived = try r.child(root, "derived").map(r.list)?.map { n -> Derived in
            _ = try r.keys(n, allowed: ["name", "from", "factor", "range", "description", "source"], required: ["name", "from", "factor", "range", "description", "source"])
            let factor = try r.double(r.child(n, "factor")!, min: 1e-3, max: 1e3)
            let range = try r.list(r.child(n, "range")!)
            guard range.count == 2 else { throw r.fail(r.child(n, "range")!, "expected [low, high]") }
            let (low, high) = (try r.double(range[0], min: 1e-3), try r.double(range[1], min: 1e-3))
            guard low <= factor, factor <= high else { throw r.fail(r.child(n, "range")!, "the range must hold the factor \(factor)") }
            return Derived(name: try r.string(r.child(n, "name")!), from: try r.string(r.child(n, "from")!), factor: factor, low: low, high: high,
                           description: try r.string(r.child(n, "description")!), source: try r.string(r.child(n, "source")!))
        } ?? []
        return EvidencePlan(estimates: try r.string(r.child(root, "estimates")!), parameters: parameters, derived: derived,
                            defaultProfile: try r.string(r.child(root, "default")!))
    }

    /// The parameter an operation belongs to.
    public func parameter(of op: CostedOperation) -> Int {
        parameters.firstIndex { $0.operations.contains(op) }!
    }
}
