import Ambar
import Foundation
import ObjectGraph

/// The kill-test harness: starts the child, kills it with SIGKILL at a seeded moment, then checks the store with
/// the `sqlite3` CLI (an independent reader) and with the container, and continues the workload from it.
struct Harness {
    var trials = 100
    var seed: UInt64 = 1
    var maxDelayMilliseconds = 300
    var workDirectory: URL?
    var executable: String

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
        var failures: [String] = []

        var summary: String {
            "crash-test: trials=\(trials) acknowledgedSaves=\(acknowledgedSaves) acknowledgedChecks=\(acknowledgedChecks) "
                + "killedMidSave=\(killedMidSave) lost=\(lost) partial=\(partial) integrityFailures=\(integrityFailures) "
                + "continued=\(continued) childExitedEarly=\(childExitedEarly) failures=\(failures.count)"
        }
    }

    func run() throws -> Figures {
        let directory = workDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("ambar-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { if workDirectory == nil { try? FileManager.default.removeItem(at: directory) } }
        let journalPath = directory.appendingPathComponent("journal.txt").path
        let storePath = directory.appendingPathComponent(CrashModel.storeFileName).path
        var rng = SeededGenerator(seed: seed)
        var figures = Figures()
        for trial in 1...trials {
            figures.trials = trial
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
                continue
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
                let before = Journal.read(path: journalPath)
                let number = try Workload.save(kind: .importer, container: container, mainQueue: queue, journal: writer, rng: &continuation)
                if number <= before.acknowledged.max() ?? 0 {
                    figures.failures.append("trial \(trial): the continuation wrote save \(number), not after the acknowledged ones")
                }
                queue.sync {}
                figures.continued += 1
            } catch {
                figures.failures.append("trial \(trial): the store did not open or continue with the same model: \(error)")
            }
            check(store: storePath, journal: Journal.read(path: journalPath), trial: trial, stage: "after the continuation", figures: &figures)
        }
        figures.acknowledgedSaves = Journal.read(path: journalPath).acknowledged.count
        return figures
    }

    /// Checks the store file against the journal: integrity, every acknowledged save whole, no save partly there.
    private func check(store: String, journal: Journal.Contents, trial: Int, stage: String, figures: inout Figures) {
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
                return
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
        } catch {
            fail("cannot read the store: \(error)", \.integrityFailures)
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
