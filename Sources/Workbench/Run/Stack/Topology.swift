import Ambar
import Foundation
import ObjectGraph
import Synchronization

/// What an actor needs from a stack; each topology builds one (architecture.md "Workbench").
public final class WorkbenchStack: @unchecked Sendable {  // closures are called from actor threads; contexts are queue-confined
    public let topology: TopologyKind
    public let viewContext: ManagedObjectContext
    /// The coordinators to read counters from, by name.
    public var coordinators: [(String, PersistentStoreCoordinator)] = []
    var makeImporter: () -> ManagedObjectContext = { fatalError() }
    var makeEditor: () throws -> ManagedObjectContext = { fatalError() }
    var makeTemporary: () -> ManagedObjectContext = { fatalError() }
    var makeWriter: () -> ManagedObjectContext = { fatalError() }
    var makeBatch: () -> ManagedObjectContext = { fatalError() }
    /// After a background context saved (nested: save the parents down to the store).
    var afterBackgroundSave: (ManagedObjectContext) throws -> Void = { _ in }
    /// Sets the view context read-only (Ambar) or gives it the rollback policy (others).
    var setViewReadOnly: (Bool) -> Void = { _ in }
    var ambar: AmbarContainer?
    /// Where committed rows are visible after `afterBackgroundSave` when background saves do not reach the store
    /// themselves (nested: the private writer context).
    var committedContext: ManagedObjectContext?
    /// Where background contexts are children: the contexts their saves push into, from the parent up to the one
    /// whose save meets the store (nested: the view context and the private writer); empty elsewhere.
    var parents: [ManagedObjectContext] = []
    /// Whether a background context's save is itself the merge into the view context (nested: the push).
    var backgroundSaveIsMerge = false
    /// Whether an editor is a child of the view context, whose save `saveViewContext` then saves (false where
    /// editors are children of a private root: their `saveViewContext` saves that root).
    var editorsSaveThroughView = true
    /// Where background saves are pushes (nested, viewChildren, privateRoot): the merge policy, by name, of the
    /// context whose save takes them to the store (the private writer, the view context, the root). Conflicts
    /// are settled by that policy, not the pushing context's, so the oracle holds the pushed writes to it.
    var committingPolicy: PolicyName?
    /// Whether the save that meets the store is observed (nested: the private writer's), so
    /// that each change it carries is attributed to the actor whose push made it.
    var observesRootSave = false
    /// Set by the workload when `observesRootSave`: saves the root (the closure given) and records its events.
    var observeRootSave: ((ManagedObjectContext, () throws -> Void) throws -> Void)?
    var policies: [String: String] = [:]
    var keepAlive: [AnyObject] = []

    init(topology: TopologyKind, viewContext: ManagedObjectContext) {
        self.topology = topology
        self.viewContext = viewContext
    }
}

/// A merge policy's name, read by actors while the runner may switch it (a read-only viewer).
final class PolicyName: Sendable {
    private let value: Mutex<String>
    init(_ name: String) { value = Mutex(name) }
    var name: String {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

/// Builds the stack of one topology for one variant.
public struct TopologyBuilder {
    let scenario: Scenario
    let model: ManagedObjectModel
    let storeURL: URL
    let main: SimulatedMainThread
    let recorder: RunRecorder

    /// Per-role default policies of each topology; the scenario's `stack.mergePolicy` (view) and
    /// `stack.policies` override them.
    static func defaultPolicies(_ topology: TopologyKind) -> [String: String] {
        switch topology {
        case .ambar, .ambar8, .ambar7:
            return ["view": "storeTrump", "importer": "objectTrump", "editor": "objectTrump", "temporary": "rollback", "writer": "objectTrump", "batch": "objectTrump"]
        case .container, .nested, .history, .viewChildren, .privateRoot, .headless:
            return ["view": "objectTrump", "importer": "objectTrump", "editor": "objectTrump", "temporary": "rollback", "writer": "objectTrump", "batch": "objectTrump"]
        }
    }

    func policy(_ role: String) -> MergePolicy {
        var names = Self.defaultPolicies(scenario.stack.topology)
        if let view = scenario.stack.mergePolicy { names["view"] = view }
        names.merge(scenario.stack.policies) { _, new in new }
        let rule: MergePolicy.DeletedElsewhereRule = scenario.stack.objectTrumpDeletedElsewhere == "resurrect" ? .resurrect : .delete
        // A built-in policy, or one a package registered; the loader checked the name.
        return Registry.policy(named: names[role] ?? "error", deletedElsewhere: rule) ?? MergePolicy(type: .error, deletedElsewhere: rule)
    }

    /// The main-queue view context on `coordinator`, with the view's policy, named and authored "view".
    func mainQueueView(on coordinator: PersistentStoreCoordinator) -> ManagedObjectContext {
        let view = ManagedObjectContext(concurrencyType: .mainQueue, queue: main.queue)
        view.persistentStoreCoordinator = coordinator
        view.mergePolicy = policy("view")
        view.name = "view"
        view.transactionAuthor = "view"
        return view
    }

    /// In a stack of parents the view's policy settles conflicts where the save meets the store: `committing` takes
    /// Rollback while the view is read-only, and the events name the policy that settled their conflicts.
    func readOnlyThroughCommittingContext(_ committing: ManagedObjectContext, of stack: WorkbenchStack) {
        let viewPolicy = policy("view"), name = PolicyName(viewPolicy.type.name)
        stack.committingPolicy = name
        stack.setViewReadOnly = { readOnly in
            committing.performAndWait { committing.mergePolicy = readOnly ? .rollback : viewPolicy }
            name.name = readOnly ? MergePolicy.rollback.type.name : viewPolicy.type.name
        }
    }

    var resolvedPolicies: [String: String] {
        var names = Self.defaultPolicies(scenario.stack.topology)
        if let view = scenario.stack.mergePolicy { names["view"] = view }
        names.merge(scenario.stack.policies) { _, new in new }
        return names
    }

    func coordinator(_ name: String, history: Bool = false, remote: Bool = false) throws -> PersistentStoreCoordinator {
        let c = PersistentStoreCoordinator(managedObjectModel: model, name: name)
        var options = StoreOptions()
        options.persistentHistoryTracking = history
        options.remoteChangeNotifications = remote
        switch scenario.stack.store {
        case .sqlite:
            // Docs/coredata-behaviour.md §14: every store of `stack.stores` in order, each with its configuration.
            for file in scenario.stack.storeFiles(main: storeURL) {
                try c.addPersistentStore(type: .sqlite, configuration: file.configuration, at: file.url, options: options)
            }
        // Semantics §7 "The in-memory store": a store of this coordinator's own (the loader refused every stack
        // that needs a second coordinator on it).
        case .inMemory: try c.addPersistentStore(type: .inMemory, options: options)
        }
        return c
    }

    func context(_ coordinator: PersistentStoreCoordinator, role: String, author: String? = nil) -> ManagedObjectContext {
        let c = ManagedObjectContext(concurrencyType: .privateQueue)
        c.persistentStoreCoordinator = coordinator
        c.mergePolicy = policy(role)
        c.name = role
        c.transactionAuthor = author ?? role
        return c
    }

    /// The view context's automatic merge (semantics §3.3), counted as main-queue merge work.
    var automaticMergeHook: @Sendable (UInt64, UInt64, ContextObjectIDChanges) -> Void {
        let recorder = self.recorder, main = self.main
        return { announced, finished, changes in
            main.mark(.merge)
            recorder.mergeLatency.record(nanoseconds: finished &- announced)
            recorder.add("objectsMerged", changes.inserted.count + changes.updated.count + changes.deleted.count)
        }
    }

    func child(of parent: ManagedObjectContext, role: String) -> ManagedObjectContext {
        let c = ManagedObjectContext(concurrencyType: .privateQueue)
        c.parent = parent
        c.mergePolicy = policy(role)
        c.name = role
        return c
    }

    public func build() throws -> WorkbenchStack {
        let kind = scenario.stack.topology
        // The `writer` actor always writes through a coordinator of its own, like another process. An in-memory
        // store has no second coordinator (the loader refused writers): its stack lists none.
        let external = scenario.stack.store == .sqlite ? try coordinator("external") : nil
        let externals = external.map { [("external", $0)] } ?? []
        let stack: WorkbenchStack
        switch kind {
        case .ambar, .ambar8, .ambar7: stack = try ambarStack(kind, externals: externals)
        case .container: stack = try containerStack(externals: externals)
        case .nested: stack = try nestedStack(externals: externals)
        case .viewChildren: stack = try viewChildrenStack(externals: externals)
        case .privateRoot: stack = try privateRootStack(externals: externals)
        case .headless: stack = try headlessStack(externals: externals)
        case .history: stack = try historyStack(externals: externals)
        }
        // A child's save pushed into the view context is main-queue work of its own kind.
        let main = self.main
        if kind.hasViewContext { stack.viewContext.performAndWait {
            stack.viewContext.childPushHook = { _ in main.mark(.push) }
            // A child's fetch or fault through the view context is a fetch on the main queue (semantics §2.2).
            stack.viewContext.childReadHook = { main.mark(.fetch) }
        } }
        for (_, coordinator) in stack.coordinators { coordinator.connectionPoolSize = scenario.stack.connectionPool }
        // The view context learns of background saves only when the scenario says so.
        if scenario.stack.merge != .didSave {
            if let ambar = stack.ambar {
                ambar.shouldMergeIncomingSavedObjects = false
            } else {
                let view = stack.viewContext
                view.performAndWait { view.automaticallyMergesChangesFromParent = false }
            }
            stack.keepAlive.removeAll { $0 is HistoryConsumer }
        }
        if let external { stack.makeWriter = { self.context(external, role: "writer") } }
        stack.policies = resolvedPolicies
        if scenario.stack.pinViewGeneration {
            // The view context reads one generation of the store until a merge, save or reset.
            let view = stack.viewContext
            do { try view.performAndWait { try view.setQueryGenerationFrom(.current) } } catch {
                throw WorkbenchError(.badInput, "stack.pinViewGeneration: \(error)")
            }
        }
        return stack
    }

    /// The Ambar stacks (`ambar`, `ambar8`, and `ambar7`, the 7.x stack): an ``AmbarContainer`` whose merges count as
    /// main-queue merge work.
    func ambarStack(_ kind: TopologyKind, externals: [(String, PersistentStoreCoordinator)]) throws -> WorkbenchStack {
        let container: AmbarContainer
        var options = AmbarContainer.Options()
        options.mainQueue = main.queue
        options.mergeFilter = kind == .ambar8 ? .bothCoordinators : .writerOnly
        options.singleCoordinator = scenario.stack.singleCoordinator
        options.mergeRelease = scenario.stack.mergeRelease ?? .mergingQueue
        if kind == .ambar7 {
            let legacy = AmbarLegacyStack(model: model, storeURL: storeURL, usingSeparateCoordinators: !scenario.stack.singleCoordinator, mainQueue: main.queue)
            let start = Clock.now()
            while !legacy.isReady && legacy.setupError == nil && Clock.now() - start < 30_000_000_000 { Clock.sleep(until: Clock.now() + 1_000_000) }
            if let error = legacy.setupError { throw error }
            guard let c = legacy.container else { throw WorkbenchError(.internalFailure, "the 7.x stack did not become ready in 30 s") }
            recorder.add("setupNanos", Int(Clock.now() - start))
            container = c
        } else {
            // Docs/coredata-behaviour.md §14.2: with `stack.stores`, both coordinators add every store, in order.
            let stores: [PersistentStoreDescription] = scenario.stack.stores == nil ? [] : scenario.stack.storeFiles(main: storeURL).map { file in
                var description = PersistentStoreDescription(url: file.url)
                description.configuration = file.configuration
                return description
            }
            container = try AmbarContainer(model: model, storeURL: storeURL, options: options, persistentStoreDescriptions: stores)
        }
        let stack = WorkbenchStack(topology: kind, viewContext: container.viewContext)
        stack.ambar = container
        let view = container.viewContext
        let viewPolicy = policy("view")
        view.performAndWait { view.mergePolicy = viewPolicy }
        stack.coordinators = container.mainCoordinator === container.writerCoordinator
            ? [("main", container.mainCoordinator)] + externals
            : [("main", container.mainCoordinator), ("writer", container.writerCoordinator)] + externals
        let recorder = self.recorder, main = self.main
        container.mergeObserver = { event in
            main.mark(.merge)
            recorder.mergeLatency.record(nanoseconds: event.finishedAt &- event.committedAt)
            recorder.add("objectsMerged", event.changes.inserted.count + event.changes.updated.count + event.changes.deleted.count)
        }
        stack.makeImporter = { let c = container.importerContext(); c.mergePolicy = self.policy("importer"); return c }
        stack.makeEditor = { let c = try container.editorContext(); c.mergePolicy = self.policy("editor"); return c }
        stack.makeTemporary = { let c = container.temporaryContext(); c.mergePolicy = self.policy("temporary"); return c }
        stack.makeBatch = { self.context(container.writerCoordinator, role: "batch") }
        stack.setViewReadOnly = { readOnly in
            container.isViewContextReadOnly = readOnly
            if !readOnly { view.performAndWait { view.mergePolicy = viewPolicy } }
        }
        return stack
    }

    /// Apple's container: the view context on the one coordinator, merging background saves automatically; editors
    /// are its children.
    func containerStack(externals: [(String, PersistentStoreCoordinator)]) throws -> WorkbenchStack {
        let coordinator = try self.coordinator("container")
        let view = mainQueueView(on: coordinator)
        view.automaticMergeHook = automaticMergeHook
        view.automaticallyMergesChangesFromParent = true
        let stack = WorkbenchStack(topology: .container, viewContext: view)
        stack.coordinators = [("container", coordinator)] + externals
        stack.makeImporter = { self.context(coordinator, role: "importer") }
        stack.makeEditor = { self.child(of: view, role: "editor") }
        stack.makeTemporary = { self.context(coordinator, role: "temporary") }
        stack.makeBatch = { self.context(coordinator, role: "batch") }
        let viewPolicy = policy("view")
        stack.setViewReadOnly = { readOnly in view.performAndWait { view.mergePolicy = readOnly ? .rollback : viewPolicy } }
        return stack
    }

    /// A private writer on the coordinator, the main-queue view context its child, and background contexts children
    /// of the view context.
    func nestedStack(externals: [(String, PersistentStoreCoordinator)]) throws -> WorkbenchStack {
        let coordinator = try self.coordinator("nested")
        let writer = context(coordinator, role: "view")
        writer.name = "privateWriter"
        let view = ManagedObjectContext(concurrencyType: .mainQueue, queue: main.queue)
        view.parent = writer
        view.name = "view"
        let main = self.main
        main.countPushesAsMerges()
        let stack = WorkbenchStack(topology: .nested, viewContext: view)
        stack.keepAlive = [writer]
        stack.committedContext = writer
        stack.parents = [view, writer]
        stack.backgroundSaveIsMerge = true
        stack.coordinators = [("nested", coordinator)] + externals
        stack.makeImporter = { self.child(of: view, role: "importer") }
        stack.makeEditor = { self.child(of: view, role: "editor") }
        stack.makeTemporary = { self.child(of: view, role: "temporary") }
        stack.makeBatch = { self.context(coordinator, role: "batch") }
        // A child's save reaches the store only when the main context and the private writer save too.
        // Only the private writer's save meets the store, so only it can fail on a conflict: count it as a
        // save failure (its changes stay in the writer, as in an app that logs the error).
        let recorder = self.recorder
        stack.observesRootSave = true
        stack.afterBackgroundSave = { [unowned stack] _ in
            try view.performAndWait {
                main.mark(.save)
                try view.save()
            }
            try writer.performAndWait {
                let save = { try recorder.saveCountingFailure(writer, role: "privateWriter") }
                if let observe = stack.observeRootSave { try observe(writer, save) } else { try save() }
            }
        }
        readOnlyThroughCommittingContext(writer, of: stack)
        return stack
    }

    /// Apple's container (the view context on the one coordinator) with every background context a child of the
    /// view context.
    func viewChildrenStack(externals: [(String, PersistentStoreCoordinator)]) throws -> WorkbenchStack {
        // Semantics §2.2: a child's save is pushed into the view context on the main queue, and only the view
        // context's own save, also on the main queue, reaches the store.
        let coordinator = try self.coordinator("viewChildren")
        let view = mainQueueView(on: coordinator)
        // As the container's view context it merges saves of root contexts on its coordinator (semantics §3.3);
        // here every context that saves is its child, so it merges none (batch results come by their IDs).
        view.automaticMergeHook = automaticMergeHook
        view.automaticallyMergesChangesFromParent = true
        let main = self.main
        main.countPushesAsMerges()
        let stack = WorkbenchStack(topology: .viewChildren, viewContext: view)
        // The oracle reads the committed rows through a private context of its own: reading them in the view
        // context would put the harness's reads on the main queue.
        let reader = context(coordinator, role: "view")
        reader.name = "committedReader"
        stack.committedContext = reader
        stack.parents = [view]
        stack.backgroundSaveIsMerge = true
        stack.coordinators = [("viewChildren", coordinator)] + externals
        stack.makeImporter = { self.child(of: view, role: "importer") }
        stack.makeEditor = { self.child(of: view, role: "editor") }
        stack.makeTemporary = { self.child(of: view, role: "temporary") }
        // Batch requests cannot run in a child: a context on the coordinator.
        stack.makeBatch = { self.context(coordinator, role: "batch") }
        // The importer saves the view context after each chunk (as `nested` saves its parents): the view
        // context's save meets the store, so only it can fail on a conflict; its changes then stay in the view.
        let recorder = self.recorder
        stack.afterBackgroundSave = { saved in
            guard saved !== view else { return }  // an editor's `saveViewContext` saved it already
            try view.performAndWait {
                main.mark(.save)
                try recorder.saveCountingFailure(view, role: "view")
            }
        }
        readOnlyThroughCommittingContext(view, of: stack)
        return stack
    }

    /// The hybrid of CoreStore and DATAStack: a private root saving context on the coordinator, the main-queue view
    /// context its child, and background contexts its other children.
    func privateRootStack(externals: [(String, PersistentStoreCoordinator)]) throws -> WorkbenchStack {
        // The children's saves push into the root on the root's queue; the root saves to the store there. Semantics
        // §3.3: a child context with automaticallyMergesChangesFromParent merges its parent's saves on its own
        // queue, so the view context learns of each root save by a merge on the main queue (what CoreStore and
        // DATAStack do by hand with mergeChanges(fromContextDidSave:), §3.1).
        let coordinator = try self.coordinator("privateRoot")
        let root = context(coordinator, role: "view")
        root.name = "rootSaving"
        let view = ManagedObjectContext(concurrencyType: .mainQueue, queue: main.queue)
        view.parent = root
        view.mergePolicy = policy("view")
        view.name = "view"
        view.automaticMergeHook = automaticMergeHook
        view.automaticallyMergesChangesFromParent = true
        let stack = WorkbenchStack(topology: .privateRoot, viewContext: view)
        stack.keepAlive = [root]
        stack.committedContext = root
        stack.parents = [root]
        stack.editorsSaveThroughView = false
        stack.coordinators = [("privateRoot", coordinator)] + externals
        stack.makeImporter = { self.child(of: root, role: "importer") }
        stack.makeEditor = { self.child(of: root, role: "editor") }
        stack.makeTemporary = { self.child(of: root, role: "temporary") }
        stack.makeBatch = { self.context(coordinator, role: "batch") }
        // Only the root's save meets the store, so only it can fail on a conflict (its changes stay in it).
        let recorder = self.recorder
        stack.afterBackgroundSave = { _ in
            try root.performAndWait {
                try recorder.saveCountingFailure(root, role: "rootSaving")
            }
        }
        readOnlyThroughCommittingContext(root, of: stack)
        return stack
    }

    /// A command-line import: private-queue contexts on one coordinator, no view context, nothing merges on a main
    /// queue.
    func headlessStack(externals: [(String, PersistentStoreCoordinator)]) throws -> WorkbenchStack {
        // The stack's `viewContext` is a private-queue context on the coordinator that nothing merges into and
        // nothing is a child of (the loader refuses viewers and editors), so the harness's own reads (the
        // oracle's) stay off the main queue.
        let coordinator = try self.coordinator("headless")
        let standIn = context(coordinator, role: "view")
        standIn.name = "noView"
        let stack = WorkbenchStack(topology: .headless, viewContext: standIn)
        stack.coordinators = [("headless", coordinator)] + externals
        stack.makeImporter = { self.context(coordinator, role: "importer") }
        stack.makeEditor = { throw WorkbenchError(.badInput, "the headless topology has no view context for an editor's child") }
        stack.makeTemporary = { self.context(coordinator, role: "temporary") }
        stack.makeBatch = { self.context(coordinator, role: "batch") }
        return stack
    }

    /// Two coordinators with persistent history: the writer's saves reach the view context by the history
    /// consumer's merges.
    func historyStack(externals: [(String, PersistentStoreCoordinator)]) throws -> WorkbenchStack {
        let writerCoordinator = try coordinator("writer", history: true)
        let mainCoordinator = try coordinator("main", history: true, remote: true)
        let view = mainQueueView(on: mainCoordinator)
        // Semantics §2.4: a history consumer sharing the file with another coordinator needs staleness 0.
        view.stalenessInterval = scenario.stack.viewStaleness ?? 0
        let stack = WorkbenchStack(topology: .history, viewContext: view)
        stack.coordinators = [("main", mainCoordinator), ("writer", writerCoordinator)] + externals
        let consumer = HistoryConsumer(view: view, coordinator: mainCoordinator, main: main, recorder: recorder)
        stack.keepAlive = [consumer]
        stack.makeImporter = { self.context(writerCoordinator, role: "importer") }
        stack.makeEditor = { self.child(of: view, role: "editor") }
        stack.makeTemporary = { self.context(mainCoordinator, role: "temporary") }
        stack.makeBatch = { self.context(writerCoordinator, role: "batch") }
        let viewPolicy = policy("view")
        stack.setViewReadOnly = { readOnly in view.performAndWait { view.mergePolicy = readOnly ? .rollback : viewPolicy } }
        return stack
    }
}

/// The history topology's merger: on each remote-change notification the main queue fetches the transactions
/// of other authors since its token and merges them into the view context (semantics §3.6).
final class HistoryConsumer: @unchecked Sendable {  // `token` is used on the main queue only
    private var token: PersistentHistoryToken?
    private var observer: (any NSObjectProtocol)?

    init(view: ManagedObjectContext, coordinator: PersistentStoreCoordinator, main: SimulatedMainThread, recorder: RunRecorder) {
        token = try? coordinator.currentPersistentHistoryToken()
        observer = NotificationCenter.default.addObserver(forName: PersistentStoreCoordinator.storeRemoteChangeNotification, object: coordinator, queue: nil) { [weak self] _ in
            let announced = Clock.now()
            main.queue.async { [weak self] in
                guard let self else { return }
                var request = PersistentHistoryRequest.fetchHistory(after: self.token)
                request.filter = { $0.author != "view" }
                guard let transactions = try? coordinator.fetchHistory(request), let last = transactions.last else { return }
                view.performAndWait {
                    for t in transactions { view.mergeChanges(fromContextDidSave: t.objectIDNotification()) }
                }
                self.token = last.token
                main.mark(.merge)
                recorder.mergeLatency.record(nanoseconds: Clock.now() - announced)
                recorder.add("objectsMerged", transactions.reduce(0) { $0 + ($1.changes?.count ?? 0) })
            }
        }
    }

    deinit { if let observer { NotificationCenter.default.removeObserver(observer) } }
}
