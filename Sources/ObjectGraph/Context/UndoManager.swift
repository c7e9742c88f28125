import Foundation

/// Records undoable changes in groups and plays them back (Foundation's `NSUndoManager`, which
/// swift-corelibs-foundation does not offer on Linux). A context records its changes here when its
/// ``ManagedObjectContext/undoManager`` is set (Rule 21.3; Docs/coredata-behaviour.md §4).
///
/// Grouping. Core Data's undo manager groups by event: AppKit and UIKit open a group when an event starts and
/// close it when the run loop turns. There is no run loop event here, so an *event* is what a context processes
/// in one ``ManagedObjectContext/processPendingChanges()``: the end of each `perform` block, a save, an explicit
/// call. With ``groupsByEvent`` (the default) a change registered with no group open opens one, and the context
/// closes it when its `processPendingChanges()` has registered the event's changes. Explicit
/// ``beginUndoGrouping()`` / ``endUndoGrouping()`` make one group of everything between them (nested groups
/// fold into the outer one).
///
/// Use a manager only on the queue of the contexts it records (as `NSUndoManager` is used on the main thread).
public final class UndoManager: @unchecked Sendable {  // confined to its contexts' queue, as NSUndoManager is
    /// One recorded undo action.
    private struct Action {
        weak var target: AnyObject?
        let targetID: ObjectIdentifier
        let run: (AnyObject) -> Void
    }

    private var undoStack: [[Action]] = []
    private var redoStack: [[Action]] = []
    /// The groups open now, innermost last.
    private var openGroups: [[Action]] = []
    /// Whether the outermost open group was opened by a registration (``groupsByEvent``), not by the app.
    private var implicitGroupOpen = false
    private var disableCount = 0
    /// Contexts told to process their pending changes at each checkpoint (`NSUndoManagerCheckpointNotification`).
    private var checkpointContexts: [WeakCheckpoint] = []

    private struct WeakCheckpoint {
        weak var context: ManagedObjectContext?
    }

    /// Whether a change registered with no group open opens one (default true, as `NSUndoManager`'s).
    public var groupsByEvent = true
    /// How many groups the undo stack keeps; 0 (the default) keeps all. The oldest go first.
    public var levelsOfUndo = 0 {
        didSet { trim() }
    }
    /// Whether ``undo()`` is running its actions.
    public private(set) var isUndoing = false
    /// Whether ``redo()`` is running its actions.
    public private(set) var isRedoing = false

    /// Creates an empty undo manager.
    public init() {}

    /// How deep the open groups are nested (0: none open).
    public var groupingLevel: Int { openGroups.count }
    /// Whether there is a group to undo (an open group with actions counts: ``undo()`` closes it first).
    public var canUndo: Bool { !undoStack.isEmpty || openGroups.contains { !$0.isEmpty } }
    /// Whether there is a group to redo.
    public var canRedo: Bool { !redoStack.isEmpty }
    /// The number of groups on the undo stack (closed groups only).
    var undoGroupCount: Int { undoStack.count }
    /// The number of groups on the redo stack.
    var redoGroupCount: Int { redoStack.count }
    /// Whether registrations are recorded (see ``disableUndoRegistration()``).
    public var isUndoRegistrationEnabled: Bool { disableCount == 0 }

    /// Stops recording registrations until a matching ``enableUndoRegistration()``; calls nest.
    ///
    /// A context registers an event's changes when it processes them, so changes made while registration is
    /// disabled are still recorded if they are processed after it is enabled again: call the context's
    /// `processPendingChanges()` before each of the two calls, as with Core Data.
    public func disableUndoRegistration() { disableCount += 1 }

    /// Undoes one ``disableUndoRegistration()``.
    public func enableUndoRegistration() {
        precondition(disableCount > 0, "enableUndoRegistration() without a matching disableUndoRegistration()")
        disableCount -= 1
    }

    /// Opens a group: every action registered until the matching ``endUndoGrouping()`` is undone at once.
    public func beginUndoGrouping() {
        checkpoint()
        if openGroups.isEmpty { implicitGroupOpen = false }
        openGroups.append([])
    }

    /// Closes the group opened by the last ``beginUndoGrouping()``.
    public func endUndoGrouping() {
        precondition(!openGroups.isEmpty, "endUndoGrouping() called with no open undo group")
        checkpoint()
        closeGroup()
    }

    /// Records `handler`, to run on `target` when the current group is undone (or redone, when registered while
    /// undoing). The manager holds `target` weakly and `handler` (with what it captures) strongly.
    public func registerUndo<Target: AnyObject>(withTarget target: Target, handler: @escaping (Target) -> Void) {
        guard disableCount == 0 else { return }
        if openGroups.isEmpty {
            precondition(groupsByEvent, "registerUndo with no open undo group and groupsByEvent false")
            openGroups.append([])
            implicitGroupOpen = true
        }
        openGroups[openGroups.count - 1].append(Action(target: target, targetID: ObjectIdentifier(target)) { object in
            // Only ever run with the target it was registered for.
            handler(unsafeDowncast(object, to: Target.self))
        })
        // A new change outside undo and redo makes the redo stack meaningless, as in NSUndoManager.
        if !isUndoing, !isRedoing { redoStack.removeAll() }
    }

    /// Closes the group a registration opened (``groupsByEvent``): the end of a context's event.
    func endEventGroup() {
        guard implicitGroupOpen, openGroups.count == 1 else { return }
        closeGroup()
    }

    /// Undoes the last group: closes a top-level group still open (an event's, or one the app began), then runs
    /// the last group's actions in reverse order. What the actions register goes to the redo stack.
    public func undo() {
        checkpoint()
        // As NSUndoManager: an open top-level group is closed first; a nested one is an error.
        precondition(openGroups.count <= 1, "undo() called with nested undo groups open (groupingLevel \(openGroups.count))")
        if openGroups.count == 1 { closeGroup() }
        guard let group = undoStack.popLast() else { return }
        isUndoing = true
        run(group)
        isUndoing = false
    }

    /// Redoes the last undone group. What its actions register goes back to the undo stack.
    public func redo() {
        checkpoint()
        // As NSUndoManager: an open top-level group is closed first; a nested one is an error.
        precondition(openGroups.count <= 1, "redo() called with nested undo groups open (groupingLevel \(openGroups.count))")
        if openGroups.count == 1 { closeGroup() }
        guard let group = redoStack.popLast() else { return }
        isRedoing = true
        run(group)
        isRedoing = false
    }

    /// Empties both stacks (and any open group).
    public func removeAllActions() {
        undoStack.removeAll()
        redoStack.removeAll()
        for i in openGroups.indices { openGroups[i].removeAll() }
    }

    /// Removes every action registered with `target` from both stacks and the open groups.
    public func removeAllActions(withTarget target: AnyObject) {
        let id = ObjectIdentifier(target)
        func keep(_ action: Action) -> Bool { action.targetID != id && action.target != nil }
        undoStack = undoStack.map { $0.filter(keep) }.filter { !$0.isEmpty }
        redoStack = redoStack.map { $0.filter(keep) }.filter { !$0.isEmpty }
        for i in openGroups.indices { openGroups[i] = openGroups[i].filter(keep) }
    }

    // MARK: Contexts

    func addCheckpointContext(_ context: ManagedObjectContext) {
        checkpointContexts.removeAll { $0.context == nil || $0.context === context }
        checkpointContexts.append(WeakCheckpoint(context: context))
    }

    func removeCheckpointContext(_ context: ManagedObjectContext) {
        checkpointContexts.removeAll { $0.context == nil || $0.context === context }
    }

    /// Core Data processes a context's pending changes at each checkpoint of its undo manager (begin and end of
    /// a group, undo, redo), so that they are registered in the group they belong to. Only contexts whose queue
    /// this is: the others are processed by their own `perform` blocks.
    private func checkpoint() {
        for entry in checkpointContexts {
            guard let context = entry.context, context.queue.isCurrent else { continue }
            context.processPendingChanges()
        }
    }

    // MARK: Groups

    private func closeGroup() {
        let group = openGroups.removeLast()
        if openGroups.isEmpty {
            implicitGroupOpen = false
            guard !group.isEmpty else { return }
            if isUndoing {
                redoStack.append(group)
            } else {
                undoStack.append(group)
                trim()
            }
        } else {
            openGroups[openGroups.count - 1].append(contentsOf: group)
        }
    }

    /// Runs a group's actions, last first, inside a group that collects what they register.
    private func run(_ group: [Action]) {
        openGroups.append([])
        implicitGroupOpen = false
        for action in group.reversed() {
            guard let target = action.target else { continue }
            action.run(target)
        }
        // The targets' pending changes of this undo belong to the group being collected.
        checkpoint()
        closeGroup()
    }

    private func trim() {
        if levelsOfUndo > 0, undoStack.count > levelsOfUndo { undoStack.removeFirst(undoStack.count - levelsOfUndo) }
    }
}
