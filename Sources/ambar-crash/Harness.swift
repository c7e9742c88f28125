import Ambar
import Foundation
import ObjectGraph
import SeededRandom

/// The kill-test harness: starts the child, kills it with SIGKILL at a seeded moment, then checks the store with
/// the `sqlite3` CLI (an independent reader) and with the container, and continues the workload from it.
///
/// A trial's cost must not grow with the trials before it. Each check reads the whole store and
/// the whole journal (every acknowledged save, verified after every kill), so one store kept for the whole run made
/// the n-th trial cost O(n) and the run O(n²). The run is cut into generations instead: a store and its journal
/// live until a trial ends with at least `generationItems` items in the store, then the next trial starts a fresh
/// store and journal. Nothing is checked less: every check still verifies every acknowledged save of its store, a
/// generation is closed only right after a check that verified all of its saves, and no later child opens a closed
/// store, so nothing can change it after that check. The store a trial starts from holds fewer than
/// `generationItems` items, so a trial's work is bounded by that plus what one child writes before its kill.
struct Harness {
    var trials = 100
    var seed: UInt64 = 1
    var maxDelayMilliseconds = 300
    var workDirectory: URL?
    var executable: String
    /// Items after which the next trial starts a fresh store (a new generation).
    var generationItems = 5_000
    /// Told after each trial (trials done, figures so far); the caller prints progress.
    var progress: ((Int, Figures) -> Void)?

    /// The figures of a run; `failures` lists every broken promise.
    struct Figures {
        var trials = 0
        var acknowledgedSaves = 0
        var acknowledgedChecks = 0
        var killedMidSave = 0
        var childExitedEarly = 0
        var lost = 0
        var partial = 0
        var integrityFailures = 0
        var continued = 0
        /// Stores used (a new one each time one reaches `generationItems` items).
        var generations = 0
        /// The work per trial: the most items a trial's store held before its child ran (always fewer than
        /// `generationItems`), and the most items and acknowledged saves one check verified.
        var maxCarriedItems: Int64 = 0
        var maxCheckedItems: Int64 = 0
        var maxCheckedSaves = 0
        /// Items written over the run, in every store (what one store kept for the whole run would hold).
        var itemsWritten: Int64 = 0
        var failures: [String] = []

        var summary: String {
            "crash-test: trials=\(trials) acknowledgedSaves=\(acknowledgedSaves) acknowledgedChecks=\(acknowledgedChecks) "
                + "killedMidSave=\(killedMidSave) lost=\(lost) partial=\(partial) integrityFailures=\(integrityFailures) "
                + "continued=\(continued) childExitedEarly=\(childExitedEarly) generations=\(generations) "
                + "maxCarriedItems=\(maxCarriedItems) maxCheckedItems=\(maxCheckedItems) maxCheckedSaves=\(maxCheckedSaves) itemsWritten=\(itemsWritten) failures=\(failures.count)"
        }
    }

    /// One store and its journal.
    private struct Generation {
        let directory: URL
        var journalPath: String { directory.appendingPathComponent("journal.txt").path }
        var storePath: String { directory.appendingPathComponent(CrashModel.storeFileName).path }
        /// Items in the store at its last check.
        var items: Int64 = 0
        /// Its acknowledged saves already added to the figures.
        var countedAcknowledged = 0
    }

    func run() throws -> Figures {
        let directory = workDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("ambar-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { if workDirectory == nil { try? FileManager.default.removeItem(at: directory) } }
        var rng = SeededGenerator(seed: seed)
        var figures = Figures()
        var generation: Generation?
        for trial in 1...trials {
            figures.trials = trial
            if generation == nil || generation!.items >= generationItems {
                // The closed store was verified whole by the check that ended its last trial; nothing opens it again.
                if let closed = generation { try? FileManager.default.removeItem(at: closed.directory) }
                figures.generations += 1
                let next = Generation(directory: directory.appendingPathComponent("generation-\(figures.generations)", isDirectory: true))
                try FileManager.default.createDirectory(at: next.directory, withIntermediateDirectories: true)
                generation = next
            }
            try runTrial(trial, in: &generation!, rng: &rng, figures: &figures)
            progress?(trial, figures)
        }
        return figures
    }

    private func runTrial(_ trial: Int, in generation: inout Generation, rng: inout SeededGenerator, figures: inout Figures) throws {
        let directory = generation.directory
        let journalPath = generation.journalPath, storePath = generation.storePath
        figures.maxCarriedItems = max(figures.maxCarriedItems, generation.items)
        let childSeed = UInt64.random(in: 0...UInt64.max, using: &rng)
        let delay = Int.random(in: 0..<max(1, maxDelayMilliseconds), using: &rng)
        let stderrPath = directory.appendingPathComponent("child-stderr.txt").path
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: executable)
        child.arguments = ["child", "--directory", directory.path, "--journal", journalPath, "--seed", String(childSeed)]
        child.standardError = FileHandle(forWritingAtPath: stderrPath)
        child.standardOutput = FileHandle.nullDevice
        try child.run()
        usleep(UInt32(delay) * 1000)
        if child.isRunning {
            kill(child.processIdentifier, SIGKILL)
        }
        child.waitUntilExit()
        if child.terminationReason != .uncaughtSignal {
            figures.childExitedEarly += 1
            let text = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
            figures.failures.append("trial \(trial): the child exited by itself with status \(child.terminationStatus): \(text)")
            return
        }
        let journal = Journal.read(path: journalPath)
        if journal.lastIntent > 0, !journal.acknowledged.contains(journal.lastIntent) { figures.killedMidSave += 1 }
        check(store: storePath, journal: journal, trial: trial, stage: "after the kill", figures: &figures)
        // The store opens with the same model and a new import continues from it.
        do {
            let queue = ContextQueue(label: "crash.harness.main")
            let container = try Workload.openContainer(directory: directory, mainQueue: queue)
            let writer = try Journal(path: journalPath)
            var continuation = SeededGenerator(seed: childSeed ^ 0x5EED)
            let number = try Workload.save(kind: .importer, container: container, mainQueue: queue, journal: writer, rng: &continuation)
            if number <= journal.acknowledged.max() ?? 0 {
                figures.failures.append("trial \(trial): the continuation wrote save \(number), not after the acknowledged ones")
            }
            queue.sync {}
            figures.continued += 1
        } catch {
            figures.failures.append("trial \(trial): the store did not open or continue with the same model: \(error)")
        }
        let final = Journal.read(path: journalPath)
        if let items = check(store: storePath, journal: final, trial: trial, stage: "after the continuation", figures: &figures) {
            figures.itemsWritten += max(0, items - generation.items)
            generation.items = items
        }
        // Saves acknowledged in this store and not counted before (a generation's count only grows).
        figures.acknowledgedSaves += final.acknowledged.count - generation.countedAcknowledged
        generation.countedAcknowledged = final.acknowledged.count
    }

    /// Checks the store file against the journal: integrity, every acknowledged save whole, no save partly there.
    /// Returns the items the store holds (nil when it cannot be read).
    @discardableResult
    private func check(store: String, journal: Journal.Contents, trial: Int, stage: String, figures: inout Figures) -> Int64? {
        func fail(_ what: String, _ counter: WritableKeyPath<Figures, Int>) {
            figures[keyPath: counter] += 1
            figures.failures.append("trial \(trial) \(stage): \(what)")
        }
        do {
            let integrity = try sqlite(store, "PRAGMA integrity_check;")
            if integrity != [["ok"]] { fail("integrity_check says \(integrity)", \.integrityFailures) }
            let tables = try sqlite(store, "SELECT count(*) FROM sqlite_master WHERE name IN ('ZITEM', 'ZLEDGER');")
            guard tables == [["2"]] else {
                if !journal.acknowledged.isEmpty { fail("the schema is missing after acknowledged saves", \.lost) }
                return 0
            }
            let ledgerRows = try sqlite(store, "SELECT ZSAVES, ZITEMS, ZEDITS FROM ZLEDGER;")
            let ledger = ledgerRows.first.map { $0.map { Int64($0) ?? -1 } } ?? [0, 0, 0]
            if ledgerRows.count > 1 { fail("\(ledgerRows.count) ledger rows", \.partial) }
            let (saves, items, edits) = (ledger[0], ledger[1], ledger[2])
            let totals = try sqlite(store, "SELECT count(*), coalesce(sum(ZEDITS), 0), coalesce(max(ZID), 0), count(DISTINCT ZID), coalesce(max(ZSAVENUMBER), 0) FROM ZITEM;")
            let t = totals.first?.map { Int64($0) ?? -1 } ?? []
            if t.count != 5 || t[0] != items || t[1] != edits || t[2] != items || t[3] != items || t[4] > saves {
                fail("the ledger (saves \(saves), items \(items), edits \(edits)) does not match the items \(t)", \.partial)
            }
            var bySave: [Int64: Int64] = [:]
            for row in try sqlite(store, "SELECT ZSAVENUMBER, count(*) FROM ZITEM GROUP BY ZSAVENUMBER;") where row.count == 2 {
                bySave[Int64(row[0]) ?? -1] = Int64(row[1]) ?? -1
            }
            figures.maxCheckedItems = max(figures.maxCheckedItems, t.first ?? 0)
            figures.maxCheckedSaves = max(figures.maxCheckedSaves, journal.acknowledged.count)
            for k in journal.acknowledged.sorted() {
                figures.acknowledgedChecks += 1
                let expected = journal.intents[k]?.inserts ?? -1
                if k > saves || bySave[k, default: 0] != expected {
                    fail("acknowledged save \(k) is lost: \(bySave[k, default: 0]) of \(expected) items, the ledger is at save \(saves)", \.lost)
                }
            }
            if saves > 0 {
                var journalEdits: Int64 = 0
                for k in 1...saves {
                    guard let intent = journal.intents[k] else {
                        fail("save \(k) is in the store but was never journaled", \.partial)
                        continue
                    }
                    journalEdits += intent.edits
                    if bySave[k, default: 0] != intent.inserts {
                        fail("save \(k) is partly present: \(bySave[k, default: 0]) of \(intent.inserts) items", \.partial)
                    }
                }
                if journalEdits != edits { fail("the ledger counts \(edits) edits, the journaled saves \(journalEdits)", \.partial) }
            }
            if saves > journal.lastIntent { fail("the ledger is at save \(saves), beyond the last journaled save \(journal.lastIntent)", \.partial) }
            return t.first ?? 0
        } catch {
            fail("cannot read the store: \(error)", \.integrityFailures)
            return nil
        }
    }

    /// Rows of `sql` as the `sqlite3` CLI prints them.
    private func sqlite(_ path: String, _ sql: String) throws -> [[String]] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sqlite3", "-batch", "-noheader", "-separator", "|", path, sql]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CrashToolError("sqlite3 failed (\(process.terminationStatus)) on \(sql): \(errorText)")
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
    }
}
