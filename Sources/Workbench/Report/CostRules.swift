/// The Core Data behaviours a report's figures rest on, each with how sure we are of it (the
/// list and its sources: Docs/what-the-workbench-counts.md).
public struct CostRule: Sendable, Equatable {
    /// How well a rule is known to match Apple's Core Data.
    public enum Confidence: String, Sendable, CaseIterable {
        /// Observed on Apple's Core Data (a recorded run).
        case verified = "verified on Apple"
        /// Apple's documentation or release notes say so.
        case documented = "documented by Apple"
        /// Reported by others (posts, issue threads, SQL logs), not checked on a device by us.
        case secondHand = "second-hand"
        /// Our reading of the above; to be confirmed on a device.
        case inferred = "inferred"
        /// Not Core Data's behaviour: an option of ours, to show what it would save.
        case notCoreData = "not Core Data (an option)"
    }

    public var id: String
    /// What Core Data does (or what the option does instead).
    public var statement: String
    public var confidence: Confidence
    /// The figures it moves.
    public var figures: String

    /// Every rule, in the order a report lists them.
    public static let catalog: [CostRule] = [
        CostRule(id: "frc-evaluates-each-insert",
                 statement: "A fetched results controller evaluates each merged insert of its entity in memory (predicate, sort and section keys), which fires the insert's fault: one fulfilment each, from the store when the view's coordinator has no row cached (the Ambar stack), visible or not.",
                 confidence: .secondHand, figures: "faultsFulfilled[queue=main], frcObjectsEvaluated, mainBusy[merge]"),
        CostRule(id: "frc-store-trip-per-insert",
                 statement: "Each such fulfilment is a store round trip when the receiving coordinator has not cached the row.",
                 confidence: .inferred, figures: "faultsFulfilled[queue=main,source=store], sqlStatements[queue=main,kind=select]"),
        CostRule(id: "frc-limit-grows",
                 statement: "A controller's fetchLimit is not applied after changes: its results grow past it as inserts merge.",
                 confidence: .secondHand, figures: "frcObjects"),
        CostRule(id: "frc-batched-option",
                 statement: "viewer.frc: batched evaluates merged faults in bulk queries where that costs less than firing them, and trims to the limit. Core Data does not; the figures show what a smarter controller would save. It saves nothing where every merged row is in the row cache (one shared coordinator, as `container`) and the request has no fetchLimit: a cached fault costs less than any query, so it does Core Data's work there.",
                 confidence: .notCoreData, figures: "faultsFulfilled[queue=main], frcObjectsEvaluated, mainBusy[merge]"),
        CostRule(id: "frc-fetch-batches",
                 statement: "With fetchBatchSize a controller's fetch reads the IDs, then rows a batch at a time as objects are touched.",
                 confidence: .documented, figures: "rowsFetched[queue=main], mainBusy[fetch]"),
        CostRule(id: "merge-refreshes-registered",
                 statement: "A did-save merge refreshes only the objects the receiving context has registered; updates to objects it never loaded cost nothing there.",
                 confidence: .documented, figures: "objectsRefreshed[queue=main], mergeObjectsExamined"),
        CostRule(id: "child-save-on-parent-queue",
                 statement: "A child context's save pushes its changes into the parent on the parent's queue; with a main-queue parent that work, and the parent's own save, runs on the main queue.",
                 confidence: .documented, figures: "mainBusy[push], mainBusy[save], mainStall"),
        CostRule(id: "connection-pool",
                 statement: "Since iOS 10 / macOS 10.12 a coordinator's SQLite store keeps a pool of connections: reads overlap each other and one writer. The pool's default size is not published; ours (4) is inferred.",
                 confidence: .documented, figures: "mainBlocked, mainStall"),
        CostRule(id: "serialized-coordinator",
                 statement: "stack.connectionPool: 1 serializes every store request of a coordinator, as before iOS 10.",
                 confidence: .documented, figures: "mainBlocked, mainStall"),
        CostRule(id: "profile-costs",
                 statement: "Virtual times are operation counts priced by the cost profile; the profile's prices are estimates fitted to published measurements, not device traces.",
                 confidence: .inferred, figures: "every virtual time (mainBusy, mergeLatency, saveLatency, frames)"),
    ]

    public static func named(_ id: String) -> CostRule? { catalog.first { $0.id == id } }

    /// The rules a variant's figures rest on, in catalog order.
    static func applying(to scenario: Scenario) -> [String] {
        // A frames-only viewer has no controller.
        let viewers = scenario.phases.flatMap(\.actors).compactMap { if case .viewer(let v) = $0, v.frames == .window { return v } else { return nil } }
        let children = [.nested, .viewChildren].contains(scenario.stack.topology) || scenario.phases.flatMap(\.actors).contains { if case .editor = $0 { return true } else { return false } }
        // A controller that tracks no change (no delegate, Docs/coredata-behaviour.md §5) evaluates none.
        let tracking = viewers.filter(\.tracksChanges)
        var ids: [String] = []
        if tracking.contains(where: { $0.frc == .coreData }) {
            ids += ["frc-evaluates-each-insert", "frc-store-trip-per-insert"]
            if tracking.contains(where: { $0.request.fetchLimit > 0 }) { ids.append("frc-limit-grows") }
        }
        if tracking.contains(where: { $0.frc == .batched }) { ids.append("frc-batched-option") }
        if viewers.contains(where: { $0.request.fetchBatchSize > 0 }) { ids.append("frc-fetch-batches") }
        // Imports reach the view context by a push (nested, viewChildren) or nowhere (headless): no merge.
        if ![.nested, .viewChildren, .headless].contains(scenario.stack.topology) { ids.append("merge-refreshes-registered") }
        if children { ids.append("child-save-on-parent-queue") }
        if scenario.mode == .simulated {
            ids.append(scenario.stack.connectionPool > 1 ? "connection-pool" : "serialized-coordinator")
            ids.append("profile-costs")
        }
        return catalog.map(\.id).filter(ids.contains)
    }
}
