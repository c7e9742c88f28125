import ObjectGraph
import Synchronization

/// Merge policies and models a package using the workbench as a library registers under names its scenarios use:
/// `stack.mergePolicy: lastWriterWins`, `model: shop`.
///
/// ```swift
/// import Workbench
/// Registry.registerPolicy("lastWriterWins") { rule in LastWriterWins(type: .mergeByPropertyObjectTrump, deletedElsewhere: rule) }
/// Registry.registerModel("shop", ModelFile(entities: [...]))
/// let outcomes = try Suite.run(files: ["Scenarios/shop.yaml"], options: Suite.Options())
/// ```
public enum Registry {
    /// Makes a policy; it is given the scenario's `objectTrumpDeletedElsewhere` rule.
    public typealias PolicyMaker = @Sendable (MergePolicy.DeletedElsewhereRule) -> MergePolicy

    private struct Entries {
        var policies: [String: PolicyMaker] = [:]
        var models: [String: ModelFile] = [:]
    }
    private static let entries = Mutex(Entries())

    /// Registers `make` under `name` (replacing an earlier registration of that name). The built-in names (error,
    /// storeTrump, objectTrump, overwrite, rollback) cannot be taken.
    public static func registerPolicy(_ name: String, _ make: @escaping PolicyMaker) {
        precondition(MergePolicy.named(name) == nil, "'\(name)' is a built-in merge policy")
        precondition(!name.isEmpty, "a policy needs a name")
        entries.withLock { $0.policies[name] = make }
    }

    /// Registers a model under `name` (replacing an earlier one); `workload` is the shipped model's and cannot be taken.
    public static func registerModel(_ name: String, _ model: ModelFile) {
        precondition(name != "workload", "'workload' is the shipped model")
        entries.withLock { $0.models[name] = model }
    }

    /// The policy named `name`: a built-in one, or a registered one.
    public static func policy(named name: String, deletedElsewhere rule: MergePolicy.DeletedElsewhereRule = .delete) -> MergePolicy? {
        if let builtIn = MergePolicy.named(name) { return MergePolicy(type: builtIn.type, deletedElsewhere: rule) }
        return entries.withLock { $0.policies[name] }.map { $0(rule) }
    }

    /// Whether the policy's type promises to drop a saving context's writes on a conflict (StoreTrump, Rollback):
    /// a registered subclass promises what its type does.
    static func promisesLosses(_ name: String) -> Bool {
        [.mergeByPropertyStoreTrump, .rollback].contains(policy(named: name)?.type)
    }

    static func isPolicy(_ name: String) -> Bool { MergePolicy.named(name) != nil || entries.withLock { $0.policies[name] != nil } }
    static var policyNames: [String] { ["error", "storeTrump", "objectTrump", "overwrite", "rollback"] + entries.withLock { $0.policies.keys.sorted() } }
    static func model(named name: String) -> ModelFile? { entries.withLock { $0.models[name] } }
    static var modelNames: [String] { ["workload"] + entries.withLock { $0.models.keys.sorted() } }
}
