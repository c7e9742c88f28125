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
        package var operations: [CostedOperation]
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
        /// Where `name` and `from` are written in the plan.
        public var nameAt: EvidencePlace? = nil
        public var fromAt: EvidencePlace? = nil
    }

    /// The profile of estimates (`Profiles/<estimates>.yaml`): every figure before the fit.
    public var estimates: String
    public var parameters: [Parameter]
    public var derived: [Derived]
    /// The profile entries are judged against when their device has no profile of its own.
    public var defaultProfile: String
    /// The plan's file, as it was given.
    public var file: String = ""

    public static func load(file: String) throws -> EvidencePlan {
        try load(text: try ScenarioLoader.readScenarioText(file, what: "evidence plan"), file: file)
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
        let estimatesNode = r.child(root, "estimates")!
        let estimates = try r.string(estimatesNode)
        var derivedNames: [String] = []
        let derived = try r.child(root, "derived").map(r.list)?.map { n -> Derived in
            _ = try r.keys(n, allowed: ["name", "from", "factor", "range", "description", "source"], required: ["name", "from", "factor", "range", "description", "source"])
            let factor = try r.double(r.child(n, "factor")!, min: 1e-3, max: 1e3)
            let range = try r.list(r.child(n, "range")!)
            guard range.count == 2 else { throw r.fail(r.child(n, "range")!, "expected [low, high]") }
            let (low, high) = (try r.double(range[0], min: 1e-3), try r.double(range[1], min: 1e-3))
            guard low <= factor, factor <= high else { throw r.fail(r.child(n, "range")!, "the range must hold the factor \(factor)") }
            let (nameNode, fromNode) = (r.child(n, "name")!, r.child(n, "from")!)
            let name = try r.string(nameNode)
            // The fit writes `Profiles/<name>.yaml`: a name that is not a profile name, or that another profile of
            // the fit already has, would write somewhere else or over it.
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                throw r.fail(nameNode, "a profile name: letters, digits, - and _, found '\(name)'")
            }
            guard name != estimates else { throw r.fail(nameNode, "\(name) is the estimates profile: a derived profile would overwrite it") }
            guard !derivedNames.contains(name) else { throw r.fail(nameNode, "\(name) is derived twice: each derived profile has one name") }
            derivedNames.append(name)
            return Derived(name: name, from: try r.string(fromNode), factor: factor, low: low, high: high,
                           description: try r.string(r.child(n, "description")!), source: try r.string(r.child(n, "source")!),
                           nameAt: EvidencePlace(nameNode), fromAt: EvidencePlace(fromNode))
        } ?? []
        return EvidencePlan(estimates: estimates, parameters: parameters, derived: derived,
                            defaultProfile: try r.string(r.child(root, "default")!), file: file)
    }

    /// Checks the plan against the entries before anything runs: a `fit` entry's device is the profile the fit
    /// writes for it, so it is neither the estimates nor a derived profile; a derived profile comes from a device
    /// that `fit` entries measure and is not one of them.
    public func check(_ entries: [EvidenceEntry]) throws {
        let fitted = entries.filter { $0.role == .fit }
        for entry in fitted {
            let place = entry.deviceAt ?? EvidencePlace(field: "device")
            if entry.device == estimates {
                throw place.fail(entry.file, "\(entry.device) is the estimates profile (\(file)): a fit entry names the device it measured, whose profile the fit writes")
            }
            if derived.contains(where: { $0.name == entry.device }) {
                throw place.fail(entry.file, "\(entry.device) is derived in \(file), not fitted: a fit entry names the device it measured (make it a check entry to judge the derived profile)")
            }
        }
        for d in derived {
            guard fitted.contains(where: { $0.device == d.from }) else {
                throw (d.fromAt ?? EvidencePlace(field: "derived")).fail(file, "\(d.name) is derived from \(d.from), which no fit entry measures")
            }
        }
    }

    /// The parameter an operation belongs to.
    package func parameter(of op: CostedOperation) -> Int {
        parameters.firstIndex { $0.operations.contains(op) }!
    }
}
