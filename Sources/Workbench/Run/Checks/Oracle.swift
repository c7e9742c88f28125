import Foundation
import ObjectGraph

/// The oracle (workbench.md "The oracle"): replays what each merge policy promises (semantics §1) against the
/// operation history and the final store and view state.
public struct OracleReport: Sendable, Codable, Equatable {
    public enum Verdict: String, Sendable, Codable { case pass, fail, unknown }
    public struct Finding: Sendable, Codable, Equatable {
        /// lostUpdate, promisedLoss, staleValue, readOnlySave, duplicate, storeMismatch.
        public var kind: String
        public var key: Int64
        public var field: String
        public var detail: String
        /// Simulated mode: the step of the save that lost or replaced the write (replay to it).
        public var step: Int? = nil
    }
    public var verdict: Verdict
    /// Acknowledged writes lost without the policy promising it.
    public var lostUpdates: Int
    /// Acknowledged writes the saving context's policy dropped, as that policy promises (StoreTrump, Rollback,
    /// a later Overwrite), or that a later push replaced before a nested stack's root saved. Never `error`'s: it
    /// refuses the save (the run's `refusedChanges`).
    public var promisedLosses: Int
    public var staleReads: Int
    public var readOnlySavesReachedStore: Int
    public var duplicates: Int
    public var storeMismatches: Int
    public var unknown: Int
    public var findings: [Finding]
    public var summary: String
}

enum Oracle {
    /// The store's row of a key at the end: its version and field → value text.
    typealias Row = (version: Int64, fields: [String: String])

    /// - Parameters:
    ///   - events: committed writes.
    ///   - finalRows: the store at the end: key → field → value text, with the row version.
    ///   - viewValues: what the view context shows for its loaded objects (key → field → value), without local changes.
    static func check(events: [WriteEvent], finalRows: [Int64: Row], viewValues: [Int64: [String: String]],
                      duplicates: [Int64], readOnlySaves: Int, batchTouched: Set<Int64>) -> OracleReport {
        var checker = Checker(viewKeys: Set(viewValues.keys), batchTouched: batchTouched)
        for (key, keyEvents) in Dictionary(grouping: events, by: \.key).sorted(by: { $0.key < $1.key }) {
            checker.visit(key: key, events: keyEvents, row: finalRows[key])
        }
        return checker.finish(viewValues: viewValues, viewRows: finalRows.filter { viewValues[$0.key] != nil }, duplicates: duplicates, readOnlySaves: readOnlySaves)
    }

    /// The oracle as one pass over the keys in ascending order, each key's events with its final
    /// row, keeping counts and the capped findings only, so that a run's whole history and store never need to be
    /// in memory at once.
    struct Checker {
        let viewKeys: Set<Int64>
        let batchTouched: Set<Int64>
        private var findings: [OracleReport.Finding] = []
        private var lost = 0, promised = 0, mismatches = 0, unknown = 0
        // Why a record could not be checked.
        private var unknownBatch = 0, unknownNewer = 0
        // Each policy's promises, decided once per name (a registered policy is made by its package's closure).
        private var promises: [String: (losses: Bool, overwrites: Bool)] = [:]
        /// The step of the last event of each key the view shows (a stale value's replay point).
        private var lastSteps: [Int64: Int] = [:]
        private var previousKey: Int64?

        init(viewKeys: Set<Int64>, batchTouched: Set<Int64>) {
            self.viewKeys = viewKeys
            self.batchTouched = batchTouched
        }

        private mutating func promise(_ name: String) -> (losses: Bool, overwrites: Bool) {
            if let known = promises[name] { return known }
            let type = Registry.policy(named: name)?.type
            let p = (losses: Registry.promisesLosses(name), overwrites: type == .overwrite)
            promises[name] = p
            return p
        }

        // Keys come in ascending order: findings are capped, so the order decides which are kept (never a
        // dictionary's order).
        private mutating func add(_ f: OracleReport.Finding) { if findings.count < 200 { findings.append(f) } }

        /// Checks one key: its events (recording order) and its row in the store at the end (nil: none).
        mutating func visit(key: Int64, events keyEvents: [WriteEvent], row: Row?) {
            precondition(previousKey.map { $0 < key } ?? true, "the oracle visits keys in ascending order")
            previousKey = key
            if viewKeys.contains(key), let step = keyEvents.compactMap(\.step).max() { lastSteps[key] = step }
            if batchTouched.contains(key) {
                unknown += 1
                unknownBatch += 1
                add(.init(kind: "unknown", key: key, field: "", detail: "a batch request changed this record outside the object graph: no save recorded its values"))
                return
            }
            // Deletes (the deleter's, an importer's deleteFraction): the record is meant to be gone, unless a save
            // after the last delete put a row back (Overwrite, or ObjectTrump resurrecting it: §1.4, §10.2). Only
            // the saves after that delete describe a row that is there. Ordered by recorded time: a delete pushed
            // through parents (nested, viewChildren, privateRoot) is recorded once the parents saved, so a save that
            // committed just after it and was recorded first counts as before it (Docs/workbench.md "The oracle").
            let lastDelete = keyEvents.last { $0.deleted == true }
            let writes = keyEvents.filter { $0.deleted != true }
            let describing = lastDelete.map { d in writes.filter { $0.time > d.time } } ?? writes
            if let lastDelete, row != nil, describing.isEmpty {
                mismatches += 1
                add(.init(kind: "storeMismatch", key: key, field: "", detail: "\(lastDelete.actor)'s save deleted this record, yet the store still has it", step: lastDelete.step))
                return
            }
            if lastDelete == nil, row == nil, let gone = writes.last(where: { $0.version >= 0 }) {
                mismatches += 1
                add(.init(kind: "storeMismatch", key: key, field: "", detail: "\(gone.actor)'s save committed this record at version \(gone.version), and no save deleted it, yet the store has no row", step: gone.step))
                return
            }
            let keyEvents = row == nil ? writes : describing
            // Discarded writes (version -1) only count as losses; they wrote nothing to order.
            for e in keyEvents where e.version < 0 {
                if promise(e.policy).losses {
                    promised += 1
                    add(.init(kind: "promisedLoss", key: key, field: e.field, detail: "\(e.actor) wrote \(e.intended ?? ""); its \(e.policy) save discarded it", step: e.step))
                } else {
                    lost += 1
                    add(.init(kind: "lostUpdate", key: key, field: e.field, detail: "\(e.actor) wrote \(e.intended ?? ""); its \(e.policy) save discarded it", step: e.step))
                }
            }
            // At one version, writes come before observations: a save whose own changes the policy dropped
            // still records the row it saw, which another save wrote at that same version.
            // A write is a field its save changed (``WriteEvent/isWrite``), decided when the save
            // was made, never by comparing values: a field set to the value already there is an observation.
            let ordered = keyEvents.filter { $0.version >= 0 }.sorted {
                ($0.version, $0.isWrite ? 0 : 1, $0.time) < ($1.version, $1.isWrite ? 0 : 1, $1.time)
            }
            // The committed snapshot after the newest save equals the row at that version (a save only commits
            // when the row was at the version the context knew, semantics §1.1).
            if let last = ordered.last, let row {
                if row.version == last.version {
                    for e in ordered where e.version == last.version && row.fields[e.field] != e.committed {
                        mismatches += 1
                        add(.init(kind: "storeMismatch", key: key, field: e.field, detail: "store has \(row.fields[e.field] ?? "nil"), the last save committed \(e.committed) at version \(e.version)"))
                    }
                } else if row.version < last.version {
                    mismatches += 1
                    add(.init(kind: "storeMismatch", key: key, field: "", detail: "store row at version \(row.version), older than the saved version \(last.version)"))
                } else {
                    unknown += 1
                    unknownNewer += 1
                    add(.init(kind: "unknown", key: key, field: "", detail: "the store row is at version \(row.version), newer than any recorded save (\(last.version)): a write the workbench did not record"))
                }
            }
            for field in Set(ordered.map(\.field)).sorted() {
                var expected: String?
                var writer: WriteEvent?
                for e in ordered where e.field == field {
                    if e.isWrite, let intended = e.intended {
                        if e.committed != intended, let winner = ordered.first(where: { $0 != e && $0.isWrite && $0.field == field && $0.version == e.version && $0.intended == e.committed }) {
                            // Two writes reached the store in one save (nested contexts: a later child push
                            // overwrote the parent's value, semantics §1.7): the last write won.
                            promised += 1
                            add(.init(kind: "promisedLoss", key: key, field: field, detail: "\(e.actor) wrote \(intended); \(winner.actor)'s later write \(e.committed) replaced it in the same save"))
                        } else if e.committed != intended, Self.replacedAfterHeld(e, intended: intended, in: ordered) {
                            // The row held this value before the save committed, and another actor's later save
                            // changed it: not a change of this save, its policy took the newer value
                            // (Docs/coredata-behaviour.md §1.5). A write replaced by a later one, not lost.
                        } else if e.committed != intended {
                            // The save committed, yet its own write is not what it committed: its policy chose
                            // the store's value (StoreTrump, Rollback) or it is a bug.
                            if promise(e.policy).losses {
                                promised += 1
                                add(.init(kind: "promisedLoss", key: key, field: field, detail: "\(e.actor) wrote \(intended); its \(e.policy) save kept \(e.committed)"))
                            } else {
                                lost += 1
                                add(.init(kind: "lostUpdate", key: key, field: field, detail: "\(e.actor) wrote \(intended); its \(e.policy) save committed \(e.committed)", step: e.step))
                            }
                        }
                        expected = e.committed
                        writer = e
                    } else if let exp = expected, e.committed != exp, let w = writer {
                        // A later save that did not write this field changed it.
                        if promise(e.policy).overwrites {
                            promised += 1
                            add(.init(kind: "promisedLoss", key: key, field: field, detail: "\(w.actor)'s \(exp) overwritten by \(e.actor)'s overwrite save with \(e.committed)"))
                        } else {
                            lost += 1
                            add(.init(kind: "lostUpdate", key: key, field: field, detail: "\(w.actor)'s \(exp) replaced by \(e.committed) in \(e.actor)'s \(e.policy) save, which did not write it", step: e.step))
                        }
                        expected = e.committed
                    }
                }
            }
        }

        /// The write that replaced `e`'s value before `e`'s save committed, when there is one: the row held
        /// `intended` at an earlier version, a later save by another actor wrote the field, and the row held what
        /// `e`'s save committed just before it. A save whose conflict met the row already holding its value keeps
        /// that field unchanged from then on (semantics §1.5: only the difference from the newer snapshot is a
        /// change), so a save that slips in before its next attempt changes the field legitimately. Equal values
        /// (dates of the same operation number) make this common. Without such a history, a save that committed
        /// another value than its own write dropped its change.
        static func replacedAfterHeld(_ e: WriteEvent, intended: String, in ordered: [WriteEvent]) -> Bool {
            let before = ordered.filter { $0.field == e.field && $0.version < e.version }
            guard before.last?.committed == e.committed,
                  let held = before.lastIndex(where: { $0.committed == intended }) else { return false }
            return before[(held + 1)...].contains { $0.isWrite && $0.actor != e.actor && $0.version > before[held].version }
        }

        /// The keys of the findings so far (what events.jsonl keeps first).
        var findingKeys: [Int64] { findings.map(\.key) }

        /// The report, once every key with events was visited; `viewRows` holds the final rows of the keys the
        /// view shows.
        mutating func finish(viewValues: [Int64: [String: String]], viewRows: [Int64: Row], duplicates: [Int64], readOnlySaves: Int) -> OracleReport {
            var stale = 0
            for (key, fields) in viewValues.sorted(by: { $0.key < $1.key }) {
                guard !batchTouched.contains(key) else { continue }
                guard let row = viewRows[key] else {
                    // A record deleted from the store and still on screen: a delete the view never merged, or one a
                    // controller kept (Docs/coredata-behaviour.md §3.1, §5).
                    stale += 1
                    add(.init(kind: "staleValue", key: key, field: "", detail: "the view shows a record the store no longer has (a delete the view context never merged, or one its controller kept)", step: lastSteps[key]))
                    continue
                }
                let lastStep = lastSteps[key]
                for (field, shown) in fields.sorted(by: { $0.key < $1.key }) where row.fields[field] != nil && row.fields[field] != shown {
                    stale += 1
                    add(.init(kind: "staleValue", key: key, field: field, detail: "the view shows \(shown), the store has \(row.fields[field]!) (a save the view context never merged, or merged from a stale row cache)", step: lastStep))
                }
            }
            for key in duplicates { add(.init(kind: "duplicate", key: key, field: "", detail: "more than one row has this id")) }
            if readOnlySaves > 0 {
                add(.init(kind: "readOnlySave", key: 0, field: "", detail: "\(readOnlySaves) save(s) from a \"read-only\" (rollback) context reached the store, as in Core Data"))
            }
            let verdict: OracleReport.Verdict = (lost > 0 || mismatches > 0 || !duplicates.isEmpty) ? .fail : (unknown > 0 ? .unknown : .pass)
            var summary = "\(lost) lost update(s), \(promised) loss(es) the policy or stack promises, \(stale) stale value(s), \(duplicates.count) duplicate(s), \(mismatches) store mismatch(es), \(readOnlySaves) read-only save(s) reached the store"
            if unknown > 0 {
                var reasons: [String] = []
                if unknownBatch > 0 { reasons.append("\(unknownBatch) changed by batch requests, outside the object graph") }
                if unknownNewer > 0 { reasons.append("\(unknownNewer) stored at a newer version than any recorded save") }
                summary += "; \(unknown) record(s) could not be checked: " + reasons.joined(separator: ", ")
            }
            return OracleReport(verdict: verdict, lostUpdates: lost, promisedLosses: promised, staleReads: stale, readOnlySavesReachedStore: readOnlySaves,
                                duplicates: duplicates.count, storeMismatches: mismatches, unknown: unknown,
                                findings: findings.sorted { ($0.kind, $0.key, $0.field) < ($1.kind, $1.key, $1.field) }, summary: summary)
        }
    }
}
