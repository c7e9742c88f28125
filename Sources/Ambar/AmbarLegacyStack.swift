import Dispatch
import Foundation
import ObjectGraph
import Synchronization

/// The Ambar 7.x stack (RTCoreDataStack): the store is set up asynchronously; ``isReady`` says when the
/// contexts can be used and the callback runs on the main queue once it is. Everything else is the
/// ``AmbarContainer`` underneath, with the writer-only merge filter.
public final class AmbarLegacyStack: @unchecked Sendable {  // `container` is written once, under `lock`
    /// Called on the main queue when setup finished, with nil or the error.
    public typealias Callback = @Sendable ((any Error)?) -> Void

    private struct State {
        var container: AmbarContainer?
        var error: (any Error)?
        var mainContextReadOnly = false
        var shouldMerge = true
    }
    private let lock = Mutex(State())
    private let mainQueue: ContextQueue

    /// Starts setting up the stack.
    /// - Parameters:
    ///   - storeType: SQLite or in-memory.
    ///   - dataModelName: a model file name (see ``AmbarContainer/modelSearchPath``), or nil with `model`.
    ///   - model: the model.
    ///   - storeURL: file or directory for the store.
    ///   - usingSeparateCoordinators: two coordinators (default) or one.
    ///   - mainQueue: the queue of the main context and of the callback (default ``ContextQueue/main``).
    ///   - callback: told when the stack is ready.
    public init(
        storeType: AmbarContainer.StoreType = .sqlite, dataModelName: String? = nil, model: ManagedObjectModel? = nil,
        storeURL: URL? = nil, usingSeparateCoordinators: Bool = true, mainQueue: ContextQueue? = nil, callback: Callback? = nil
    ) {
        let main = mainQueue ?? ContextQueue.main
        self.mainQueue = main
        let modelBox = ModelBox(model)
        // 7.x set up off the main queue; a queue of the library's executor, so a simulation runs it too.
        ContextQueue(label: "Ambar.legacySetup").async { [self] in
            var options = AmbarContainer.Options()
            options.singleCoordinator = !usingSeparateCoordinators
            options.mergeFilter = .writerOnly
            options.mainQueue = main
            do {
                let container = try AmbarContainer(storeType: storeType, modelName: dataModelName, model: modelBox.model, storeURL: storeURL, options: options)
                // Options set while setting up are applied before the stack is published (7.x kept them as
                // stored properties).
                let (shouldMerge, readOnly) = lock.withLock { ($0.shouldMerge, $0.mainContextReadOnly) }
                container.shouldMergeIncomingSavedObjects = shouldMerge
                if readOnly { container.isViewContextReadOnly = true }
                lock.withLock { $0.container = container }
                main.async { callback?(nil) }
            } catch {
                lock.withLock { $0.error = error }
                main.async { callback?(error) }
            }
        }
    }

    /// Whether setup finished successfully.
    public var isReady: Bool { lock.withLock { $0.container != nil } }
    /// The setup error, if setup failed.
    public var setupError: (any Error)? { lock.withLock { $0.error } }

    private func ready() throws -> AmbarContainer {
        guard let container = lock.withLock({ $0.container }) else {
            throw AmbarError(.notReady, "the stack is still setting up; wait for isReady or the callback")
        }
        return container
    }

    /// The underlying container, once ready.
    public var container: AmbarContainer? { lock.withLock { $0.container } }
    /// The main context (`viewContext`), once ready.
    public var mainContext: ManagedObjectContext? { container?.viewContext }
    /// The main coordinator, once ready.
    public var mainCoordinator: PersistentStoreCoordinator? { container?.mainCoordinator }
    /// The writer coordinator, once ready.
    public var writerCoordinator: PersistentStoreCoordinator? { container?.writerCoordinator }

    /// 7.x `isMainContextReadOnly`: switches the main context to `.rollback`. The 7.x README says saves are then
    /// ignored; as in Core Data, conflict-free saves still reach the store.
    public var isMainContextReadOnly: Bool {
        get { lock.withLock { $0.mainContextReadOnly } }
        set {
            let container = lock.withLock { state -> AmbarContainer? in
                state.mainContextReadOnly = newValue
                return state.container
            }
            container?.isViewContextReadOnly = newValue
        }
    }

    /// 7.x `shouldMergeIncomingSavedObjects`.
    public var shouldMergeIncomingSavedObjects: Bool {
        get { lock.withLock { $0.shouldMerge } }
        set { lock.withLock { $0.shouldMerge = newValue; $0.container?.shouldMergeIncomingSavedObjects = newValue } }
    }

    /// An importer context (writer coordinator, ObjectTrump).
    public func importerContext() throws -> ManagedObjectContext { try ready().importerContext() }
    /// A temporary context (main coordinator, rollback).
    public func temporaryContext() throws -> ManagedObjectContext { try ready().temporaryContext() }
    /// An editor context (child of the main context); an error while the main context is read-only.
    public func editorContext() throws -> ManagedObjectContext { try ready().editorContext() }
}

private struct ModelBox: @unchecked Sendable {  // the model is immutable
    let model: ManagedObjectModel?
    init(_ model: ManagedObjectModel?) { self.model = model }
}
