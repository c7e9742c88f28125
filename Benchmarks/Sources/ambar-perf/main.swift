// ambar-perf: every comparison of Benchmarks/README.md in one process, printed as one table.
//   ambar-perf [--quick] [--reps N] [--rounds N] [--only import,update,fetch,fetchscale,save,savescale,merge,mergescale,frc,memory,readers]
import Foundation
import PerfKit

struct Options {
    var quick = false
    var reps = 5
    var only: Set<String>? = nil
    /// Merge rounds (default 21, or --reps if larger); fewer for a run under callgrind.
    var rounds: Int? = nil
}

func parseOptions() -> Options {
    var options = Options()
    var args = CommandLine.arguments.dropFirst()
    while let arg = args.popFirst() {
        switch arg {
        case "--quick": options.quick = true
        case "--reps": options.reps = max(1, Int(args.popFirst() ?? "") ?? 5)
        case "--rounds": options.rounds = max(1, Int(args.popFirst() ?? "") ?? 21)
        case "--only": options.only = Set((args.popFirst() ?? "").split(separator: ",").map(String.init))
        case "-h", "--help":
            print("usage: ambar-perf [--quick] [--reps N] [--rounds N] [--only import,update,fetch,fetchscale,save,savescale,merge,mergescale,frc,memory,readers]")
            exit(0)
        default:
            FileHandle.standardError.write(Data("unknown argument \(arg)\n".utf8))
            exit(2)
        }
    }
    return options
}

struct Row {
    var comparison: String
    var ours: String
    var peer: String
    var ratio: Double
    var ratioText: String
    var goal: String
    var met: Bool?
}

let options = parseOptions()
func wanted(_ name: String) -> Bool { options.only?.contains(name) ?? true }

let n = options.quick ? 10_000 : 100_000          // import / update / fetch
let chunk = 1_000                                   // commit size of imports
let updateChunk = 500                               // BatchImport's largest chunk (SQLite variable limit)
let mergeSizes = options.quick ? [1_000, 10_000] : [1_000, 10_000, 100_000]
let frcTotal = options.quick ? 10_000 : 50_000
let memorySizes = options.quick ? (small: 50_000, large: 250_000) : (small: 100_000, large: 1_000_000)

func log(_ text: String) { FileHandle.standardError.write(Data("· \(text)\n".utf8)) }
func rate(_ count: Int, _ seconds: Double) -> String { String(format: "%.0f/s", Double(count) / seconds) }
func ms(_ seconds: Double) -> String { seconds >= 0.1 ? String(format: "%.2f s", seconds) : String(format: "%.3f ms", seconds * 1000) }
func mib(_ bytes: Int64) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
func count(_ k: Int) -> String { k >= 1000 && k % 1000 == 0 ? "\(k / 1000)k" : "\(k)" }

var rows: [Row] = []
let started = nowNanos()

// MARK: import, update, fetch: three peers, same data, same commits, interleaved reps on fresh stores
if wanted("import") || wanted("update") || wanted("fetch") {
    var t: [String: [Double]] = [:]
    // Each peer on a fresh store; the order of the peers turns with every rep, so that none always runs first
    // (after the previous rep's files were removed) or last.
    let peers: [(name: String, run: (Int) throws -> Void)] = [
        ("ours", { rep in
            let ours = try OursStack()
            t["import.ours", default: []].append(try timed { try ours.importItems(0..<n, chunk: chunk, reset: false) })
            ours.drainMain()
            t["update.ours", default: []].append(try timed { try ours.updateItems(0..<n, chunk: updateChunk, round: rep + 1) })
            ours.drainMain()
            t["fetch.ours", default: []].append(try timed { let c = try ours.fetchAll(); precondition(c == n) })
        }),
        ("raw", { rep in
            let raw = try RawPeer()
            t["import.raw", default: []].append(try timed { try raw.importItems(0..<n, chunk: chunk) })
            t["update.raw", default: []].append(try timed { try raw.updateItems(0..<n, chunk: updateChunk, round: rep + 1) })
            t["fetch.raw", default: []].append(try timed { let c = try raw.fetchAll(); precondition(c == n) })
        }),
        ("grdb", { rep in
            let grdb = try GRDBPeer()
            t["import.grdb", default: []].append(try timed { try grdb.importItems(0..<n, chunk: chunk) })
            t["update.grdb", default: []].append(try timed { try grdb.updateItems(0..<n, chunk: updateChunk, round: rep + 1) })
            t["fetch.grdb", default: []].append(try timed { let c = try grdb.fetchAll(); precondition(c == n) })
        }),
        ("grdbCached", { rep in
            let grdb = try GRDBPeer()
            t["import.grdbCached", default: []].append(try timed { try grdb.importItemsCached(0..<n, chunk: chunk) })
            t["update.grdbCached", default: []].append(try timed { try grdb.updateItemsCached(0..<n, chunk: updateChunk, round: rep + 1) })
        }),
    ]
    for rep in 0..<options.reps {
        log("import/update/fetch \(count(n)) rep \(rep + 1)/\(options.reps)")
        for k in 0..<peers.count { try peers[(rep + k) % peers.count].run(rep) }
    }
    func m(_ key: String) -> Double { median(t[key]!) }
    // Each peer in the form an expert would pick, doing the same work (the table names the form).
    if wanted("import") {
        let r1 = m("import.raw") / m("import.ours"), r2 = m("import.grdbCached") / m("import.ours"), r3 = m("import.grdb") / m("import.ours")
        rows.append(Row(comparison: "import \(count(n)), commit every \(count(chunk)): throughput vs raw SQLite (one prepared INSERT, explicit transactions)", ours: rate(n, m("import.ours")),
                        peer: rate(n, m("import.raw")), ratio: r1, ratioText: String(format: "%.2f×", r1), goal: "≥ 0.6×", met: r1 >= 0.6))
        rows.append(Row(comparison: "import \(count(n)): throughput vs GRDB cached statements (db.cachedStatement in write)", ours: rate(n, m("import.ours")),
                        peer: rate(n, m("import.grdbCached")), ratio: r2, ratioText: String(format: "%.2f×", r2), goal: "≥ 1.0×", met: r2 >= 1.0))
        rows.append(Row(comparison: "import \(count(n)): throughput vs GRDB records (no goal)", ours: rate(n, m("import.ours")),
                        peer: rate(n, m("import.grdb")), ratio: r3, ratioText: String(format: "%.2f×", r3), goal: "—", met: nil))
    }
    if wanted("update") {
        let r1 = m("update.raw") / m("update.ours"), r2 = m("update.grdbCached") / m("update.ours"), r3 = m("update.grdb") / m("update.ours")
        rows.append(Row(comparison: "update \(count(n)) by unique ID, commit every \(updateChunk): throughput vs raw SQLite (prepared SELECT of the chunk by ID, then UPDATE of 3 columns by key)", ours: rate(n, m("update.ours")),
                        peer: rate(n, m("update.raw")), ratio: r1, ratioText: String(format: "%.2f×", r1), goal: "≥ 0.5×", met: r1 >= 0.5))
        rows.append(Row(comparison: "update \(count(n)) by unique ID: throughput vs GRDB cached statements (same read then write)", ours: rate(n, m("update.ours")),
                        peer: rate(n, m("update.grdbCached")), ratio: r2, ratioText: String(format: "%.2f×", r2), goal: "≥ 1.0×", met: r2 >= 1.0))
        rows.append(Row(comparison: "update \(count(n)) by unique ID: throughput vs GRDB records (fetch by ID, update 3 columns; no goal)", ours: rate(n, m("update.ours")),
                        peer: rate(n, m("update.grdb")), ratio: r3, ratioText: String(format: "%.2f×", r3), goal: "—", met: nil))
    }
    if wanted("fetch") {
        let r1 = m("fetch.ours") / m("fetch.raw"), r2 = m("fetch.ours") / m("fetch.grdb")
        rows.append(Row(comparison: "fetch \(count(n)) as faults and fire them: time vs raw SELECT", ours: ms(m("fetch.ours")),
                        peer: ms(m("fetch.raw")), ratio: r1, ratioText: String(format: "%.2f×", r1), goal: "≤ 3×", met: r1 <= 3))
        rows.append(Row(comparison: "fetch \(count(n)): time vs GRDB fetchAll (no goal)", ours: ms(m("fetch.ours")),
                        peer: ms(m("fetch.grdb")), ratio: r2, ratioText: String(format: "%.2f×", r2), goal: "—", met: nil))
    }
}

// MARK: fetch cost per object as the store grows
if wanted("fetchscale") {
    let sizes = options.quick ? (small: 10_000, large: 100_000) : (small: 10_000, large: 1_000_000)
    var perObject: [Int: [Double]] = [:]
    for size in [sizes.small, sizes.large] {
        log("fetch scale: seeding \(count(size))")
        let stack = try OursStack(label: "fetchscale")
        try stack.importItems(0..<size, chunk: chunk, reset: true)
        stack.drainMain()
        for rep in 0..<options.reps {
            log("fetch scale: \(count(size)) rep \(rep + 1)/\(options.reps)")
            perObject[size, default: []].append(try timed { let c = try stack.fetchAll(); precondition(c == size) } / Double(size))
        }
    }
    let small = median(perObject[sizes.small]!), large = median(perObject[sizes.large]!)
    let r = large / small
    func us(_ seconds: Double) -> String { String(format: "%.2f µs", seconds * 1e6) }
    rows.append(Row(comparison: "fetch as faults and fire: time per object at \(count(sizes.large)) vs at \(count(sizes.small)) (each its own store)",
                    ours: us(large), peer: us(small), ratio: r, ratioText: String(format: "%.2f×", r), goal: "≤ 1.2×", met: r <= 1.2))
}

// MARK: one save's cost against its size
if wanted("save") {
    let sizes = options.quick ? (small: 1_000, large: 10_000) : (small: 10_000, large: 100_000)
    log("save: seeding \(count(sizes.large))")
    let stack = try OursStack(label: "save")
    try stack.importItems(0..<sizes.large, chunk: chunk, reset: true)
    stack.drainMain()
    var wall: [Int: [Double]] = [:], cpu: [Int: [Double]] = [:]
    for rep in 0..<options.reps {
        log("save: \(count(sizes.small)) and \(count(sizes.large)) rep \(rep + 1)/\(options.reps)")
        let order = rep % 2 == 0 ? [sizes.small, sizes.large] : [sizes.large, sizes.small]
        for (k, size) in order.enumerated() {
            let t = try stack.timeOneSave(of: size, round: 2 * rep + k + 1)
            wall[size, default: []].append(t.wall)
            cpu[size, default: []].append(t.cpu)
        }
    }
    // The verdict is on the saving thread's CPU time (the machine is shared: a wall clock counts preemption,
    // which hits the longer save more often); the wall-clock ratio is printed beside it.
    let small = median(cpu[sizes.small]!), large = median(cpu[sizes.large]!)
    let r = large / small
    let wallRatio = median(wall[sizes.large]!) / median(wall[sizes.small]!)
    rows.append(Row(comparison: "one save of \(count(sizes.large)) updated objects vs one of \(count(sizes.small)) (\(sizes.large / sizes.small)× the work; CPU time of the saving thread in save(), importer context; wall clock: \(ms(median(wall[sizes.large]!))) vs \(ms(median(wall[sizes.small]!))), \(String(format: "%.1f×", wallRatio)))",
                    ours: ms(large), peer: ms(small), ratio: r, ratioText: String(format: "%.1f×", r), goal: "≤ 11×", met: r <= 11))
}

// MARK: merge into a view context holding 10
if wanted("merge") {
    log("merge: seeding \(count(mergeSizes.last!))")
    let stack = try OursStack(label: "merge")
    try stack.importItems(0..<mergeSizes.last!, chunk: chunk, reset: true)
    stack.drainMain()
    // One merge of each size first: the first merge after the seeding walks the view's registry once to drop
    // the entries its inserts left (whatever N is), which is not what the comparison is about.
    var mergeRound = 0
    for size in mergeSizes {
        _ = try mergeMainQueueTimes(stack: stack, n: size, reps: 1, firstRound: mergeRound)
        mergeRound += 1
    }
    // Then the sizes take turns, in an order that turns every round: a change in the machine's load during the
    // run hits every N alike instead of one of them (each merge is 50–100 µs, near the clock's noise).
    // Each round also measures every size from the same cold caches (see `CacheEvictor`): the figure that tells
    // the merge's own cost from the state of the caches the save before it left.
    let evictor = CacheEvictor()
    var samples: [Int: [Double]] = [:]
    var coldSamples: [Int: [Double]] = [:]
    let rounds = options.rounds ?? max(21, options.reps)
    log("merge N=\(mergeSizes.map(count).joined(separator: ", ")): \(rounds) rounds, as the save leaves the caches and from evicted caches")
    for round in 0..<rounds {
        for k in mergeSizes.indices {
            let size = mergeSizes[(k + round) % mergeSizes.count]
            samples[size, default: []] += try mergeMainQueueTimes(stack: stack, n: size, reps: 1, firstRound: mergeRound)
            coldSamples[size, default: []] += try mergeMainQueueTimes(stack: stack, n: size, reps: 1, firstRound: mergeRound + 1, evictor: evictor)
            mergeRound += 2
        }
    }
    func mergeRow(_ samples: [Int: [Double]], _ label: String) -> Row {
        let perN = samples.mapValues(median)
        let small = perN[mergeSizes.first!]!, large = perN[mergeSizes.last!]!
        let r = large / small
        let detail = mergeSizes.map { "N=\(count($0)): \(ms(perN[$0]!))" }.joined(separator: ", ")
        return Row(comparison: "merge a save of N into a view holding 10, \(label) (main-queue CPU time; \(detail)): N=\(count(mergeSizes.last!)) vs N=\(count(mergeSizes.first!))",
                   ours: ms(large), peer: ms(small), ratio: r, ratioText: String(format: "%.2f×", r), goal: "≤ 1.2×", met: r <= 1.2)
    }
    rows.append(mergeRow(samples, "caches as the save left them"))
    rows.append(mergeRow(coldSamples, "every merge from evicted caches (\(evictor.bytes >> 20) MiB streamed first, not timed)"))
}

// MARK: one save and one merge per object as the store grows
// One store of the large size serves both rows (seeding 1,000,000 items takes longer than the rows themselves).
if wanted("savescale") || wanted("mergescale") {
    let sizes = options.quick ? (small: 10_000, large: 100_000) : (small: 10_000, large: 1_000_000)
    // Each large rep saves (and for the merge, fetches and changes) every item of the store: at most 3 of them in
    // the full run, so that `make bench` stays within its budget; the small size takes every rep.
    let largeReps = options.quick ? options.reps : min(options.reps, 3)
    log("save and merge scale: seeding \(count(sizes.large))")
    let stack = try OursStack(label: "scale")
    try stack.importItems(0..<sizes.large, chunk: chunk, reset: true)
    stack.drainMain()
    func us(_ seconds: Double) -> String { String(format: "%.3f µs", seconds * 1e6) }
    if wanted("savescale") {
        var wall: [Int: [Double]] = [:], cpu: [Int: [Double]] = [:]
        for rep in 0..<max(options.reps, largeReps) {
            // The sizes alternate which goes first; the large one runs in the first `largeReps` reps only.
            let order = (rep % 2 == 0 ? [sizes.small, sizes.large] : [sizes.large, sizes.small]).filter { $0 == sizes.small || rep < largeReps }
            log("save scale: \(order.map(count).joined(separator: " and ")) rep \(rep + 1)/\(options.reps)")
            for (k, size) in order.enumerated() {
                let t = try stack.timeOneSave(of: size, round: 2 * rep + k + 1)
                wall[size, default: []].append(t.wall / Double(size))
                cpu[size, default: []].append(t.cpu / Double(size))
            }
        }
        // CPU time of the saving thread, per object (see the one-save row); the wall clock per object beside it.
        let small = median(cpu[sizes.small]!), large = median(cpu[sizes.large]!)
        let r = large / small
        let wallSmall = median(wall[sizes.small]!), wallLarge = median(wall[sizes.large]!)
        rows.append(Row(comparison: "one save of \(count(sizes.large)) updated objects vs one of \(count(sizes.small)), both in a store of \(count(sizes.large)) (\(largeReps) and \(options.reps) reps): CPU time of the saving thread in save() per object; wall clock per object: \(us(wallLarge)) vs \(us(wallSmall)), \(String(format: "%.2f×", wallLarge / wallSmall))",
                        ours: us(large), peer: us(small), ratio: r, ratioText: String(format: "%.2f×", r), goal: "≤ 1.2×", met: r <= 1.2))
    }
    if wanted("mergescale") {
        // A warm-up merge of each size (the first merge after the seeding sweeps the view's registry once), then
        // the sizes take turns, the order turning every round; the small size, cheap, is merged three times a round.
        var mergeRound = 0
        for size in [sizes.small, sizes.large] {
            _ = try mergeMainQueueTimes(stack: stack, n: size, reps: 1, firstRound: mergeRound)
            mergeRound += 1
        }
        var samples: [Int: [Double]] = [:]
        for round in 0..<largeReps {
            log("merge scale: N=\(count(sizes.small)) and \(count(sizes.large)) round \(round + 1)/\(largeReps)")
            let order = round % 2 == 0 ? [sizes.small, sizes.large] : [sizes.large, sizes.small]
            for size in order {
                samples[size, default: []] += try mergeMainQueueTimes(stack: stack, n: size, reps: size == sizes.small ? 3 : 1, firstRound: mergeRound)
                mergeRound += 3
            }
        }
        let small = median(samples[sizes.small]!), large = median(samples[sizes.large]!)
        let r = large / small
        rows.append(Row(comparison: "merge a save of N into a view holding 10, caches as the save left them, both in a store of \(count(sizes.large)) (main-queue CPU time per merge; \(samples[sizes.large]!.count) and \(samples[sizes.small]!.count) merges): N=\(count(sizes.large)) vs N=\(count(sizes.small))",
                        ours: ms(large), peer: ms(small), ratio: r, ratioText: String(format: "%.2f×", r), goal: "≤ 1.2×", met: r <= 1.2))
    }
}

// MARK: FRC over 20 during an import vs GRDB ValueObservation: Core Data's controller and the batched one
if wanted("frc") {
    // The three take turns in an order that turns every rep, each on a fresh store.
    var coreData: [ObservationResult] = [], batched: [ObservationResult] = [], grdb: [ObservationResult] = []
    let runs: [(String, () throws -> Void)] = [
        ("FRC (Core Data's)", { coreData.append(try oursFRCDuringImport(total: frcTotal, chunk: chunk, evaluation: .coreData)) }),
        ("FRC (batched)", { batched.append(try oursFRCDuringImport(total: frcTotal, chunk: chunk, evaluation: .batched)) }),
        ("ValueObservation", { grdb.append(try grdbObservationDuringImport(total: frcTotal, chunk: chunk)) }),
    ]
    for rep in 0..<options.reps {
        for k in 0..<runs.count {
            let (name, run) = runs[(rep + k) % runs.count]
            log("\(name) over 20 during a \(count(frcTotal)) import, rep \(rep + 1)/\(options.reps)")
            try run()
        }
    }
    // The peer is what an app with GRDB pays per change: the observation's re-fetch (on a
    // reader) and its delivery on the main queue, not the fetch alone.
    let peer = median(grdb.map { $0.perEvent + $0.mainPerDelivery })
    let grdbText = "GRDB ValueObservation, re-fetch per commit + delivery on the main queue (CPU; \(grdb[0].events) fetches, \(grdb[0].deliveries) deliveries)"
    let c = median(coreData.map(\.perEvent)), b = median(batched.map(\.perEvent))
    let rc = c / peer, rb = b / peer
    rows.append(Row(comparison: "FRC over 20 during a \(count(frcTotal)) import, Core Data's controller: main-queue CPU time per merge (\(coreData[0].events) merges) vs \(grdbText). No goal: Core Data's controller evaluates its predicate and sort keys on each merged insert, which arrives as a fault, so every merge fulfils one fault per inserted row (here a store read, the view having a coordinator of its own; second-hand)",
                    ours: ms(c), peer: ms(peer), ratio: rc, ratioText: String(format: "%.2f×", rc), goal: "—", met: nil))
    rows.append(Row(comparison: "the same with the batched controller (changeEvaluation .batched: the merged faults evaluated by one query per 500 IDs, only those that can be shown filled; not Core Data's): main-queue CPU time per merge (\(batched[0].events) merges) vs the same peer",
                    ours: ms(b), peer: ms(peer), ratio: rb, ratioText: String(format: "%.2f×", rb), goal: "≤ 1×", met: rb <= 1))
}

// MARK: memory of a chunked import
if wanted("memory") {
    if Jemalloc.allocated() == nil {
        log("jemalloc does not answer: memory comparison skipped")
    } else {
        let probe: @Sendable () -> Int64 = { Jemalloc.allocated() ?? 0 }
        log("memory: chunked import of \(count(memorySizes.small))")
        let small = try oursChunkedImportPeak(n: memorySizes.small, chunk: chunk, allocated: probe)
        log("memory: chunked import of \(count(memorySizes.large))")
        let large = try oursChunkedImportPeak(n: memorySizes.large, chunk: chunk, allocated: probe)
        let r = Double(large.peakAboveStart) / Double(max(1, small.peakAboveStart))
        rows.append(Row(comparison: "memory: peak allocated above start, chunked import (save + reset every \(count(chunk))) of \(count(memorySizes.large)) vs \(count(memorySizes.small))",
                        ours: mib(large.peakAboveStart), peer: mib(small.peakAboveStart), ratio: r, ratioText: String(format: "%.2f×", r), goal: "≤ 1.2×", met: r <= 1.2))
    }
}

// MARK: a fetch during a background save on the same coordinator
if wanted("readers") {
    let saved = options.quick ? 20_000 : 100_000
    var pooled: [ReaderWait] = [], serial: [Double] = [], unchecked: [Double] = []
    for rep in 0..<options.reps {
        log("fetch during a save of \(count(saved)) updates, rep \(rep + 1)/\(options.reps)")
        pooled.append(try fetchWaitDuringSave(pool: 4, rows: saved))
        serial.append(try fetchWaitDuringSave(pool: 1, rows: saved).longestFetch)
        unchecked.append(try fetchWaitDuringSave(pool: 4, rows: saved, autocheckpoint: false).longestFetch)
    }
    let p = median(pooled.map(\.longestFetch)), s = median(serial)
    // The rep whose longest fetch is the median one, for the split of that fetch's time.
    let middle = pooled.sorted { $0.longestFetch < $1.longestFetch }[pooled.count / 2]
    let parts = middle.longestParts
    rows.append(Row(comparison: "longest fetch of 20 during a save of \(count(saved)) updates (\(ms(median(pooled.map(\.save))))) by another context of the same coordinator: read connections (connectionPoolMaxSize 4) vs one serialized connection (1); wall clock, of which on a CPU \(ms(parts.onCPU)), runnable waiting for a CPU \(ms(parts.runQueue)), blocked \(ms(parts.blocked))",
                    ours: ms(p), peer: ms(s), ratio: p / s, ratioText: String(format: "%.3f×", p / s), goal: "< 5 ms", met: p < 0.005))
    let own = median(pooled.map(\.longestWithACPU)), blocked = median(pooled.map(\.longestBlocked))
    rows.append(Row(comparison: "the same, each fetch's wall time less its time runnable without a CPU (/proc/thread-self/schedstat; the save's thread and other processes share the cores), vs the wall clock above; the longest time blocked was \(ms(blocked))",
                    ours: ms(own), peer: ms(p), ratio: own / p, ratioText: String(format: "%.2f×", own / p), goal: "< 5 ms", met: own < 0.005))
    let u = median(unchecked)
    rows.append(Row(comparison: "the same with SQLite's automatic checkpoint off (diagnostic: the checkpoint inside the save's COMMIT holds a WAL lock new readers wait for; no goal)",
                    ours: ms(u), peer: ms(p), ratio: u / p, ratioText: String(format: "%.2f×", u / p), goal: "—", met: nil))
}

// MARK: the table
let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.split(separator: "\n").first { $0.hasPrefix("model name") }
    .map { $0.split(separator: ":", maxSplits: 1).last!.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
print("ambar-perf \(options.quick ? "--quick " : "")· \(ProcessInfo.processInfo.activeProcessorCount) cores · \(cpu) · median of \(options.reps) reps · \(String(format: "%.0f", Double(nowNanos() - started) / 1e9)) s")
print("")
print("| comparison | ours | peer | ratio | goal | met |")
print("|---|---|---|---|---|---|")
for row in rows {
    let met = row.met.map { $0 ? "yes" : "**no**" } ?? "—"
    print("| \(row.comparison) | \(row.ours) | \(row.peer) | \(row.ratioText) | \(row.goal) | \(met) |")
}
