// The quick set under package-benchmark: wall clock, CPU, malloc counts and resident memory of each peer on
// 10,000 items, with committed static thresholds (Benchmarks/Thresholds/). Setup (fresh stores, seeding) is
// outside the measurement.
import Benchmark
import PerfKit

let benchmarks: @Sendable () -> Void = {
    let n = 10_000
    let tolerances: [BenchmarkMetric: BenchmarkThresholds] = [
        // Times are noisy on a shared 2-core machine (CPU time is read in 10 ms steps): a regression is 2.5× the
        // recorded p90. Allocation counts are nearly deterministic (the main queue's merges run concurrently).
        .wallClock: .init(relative: [.p90: 150]),
        .cpuTotal: .init(relative: [.p90: 150]),
        .mallocCountTotal: .init(relative: [.p90: 10]),
        .peakMemoryResident: .init(relative: [.p90: 50]),
    ]
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .peakMemoryResident],
        timeUnits: .milliseconds,
        warmupIterations: 1,
        maxDuration: .seconds(10),
        maxIterations: 5,
        thresholds: tolerances)

    // import: commit every 1,000
    Benchmark("import_10k_ours") { benchmark in
        let stack = try OursStack()
        benchmark.startMeasurement()
        try stack.importItems(0..<n, chunk: 1_000, reset: false)
        stack.drainMain()
        benchmark.stopMeasurement()
    }
    Benchmark("import_10k_raw") { benchmark in
        let raw = try RawPeer()
        benchmark.startMeasurement()
        try raw.importItems(0..<n, chunk: 1_000)
        benchmark.stopMeasurement()
    }
    Benchmark("import_10k_grdb") { benchmark in
        let grdb = try GRDBPeer()
        benchmark.startMeasurement()
        try grdb.importItems(0..<n, chunk: 1_000)
        benchmark.stopMeasurement()
    }

    // update by unique ID: commit every 500
    Benchmark("update_10k_ours") { benchmark in
        let stack = try OursStack()
        try stack.importItems(0..<n, chunk: 1_000, reset: true)
        stack.drainMain()
        benchmark.startMeasurement()
        try stack.updateItems(0..<n, chunk: 500, round: 1)
        stack.drainMain()
        benchmark.stopMeasurement()
    }
    Benchmark("update_10k_raw") { benchmark in
        let raw = try RawPeer()
        try raw.importItems(0..<n, chunk: 1_000)
        benchmark.startMeasurement()
        try raw.updateItems(0..<n, chunk: 500, round: 1)
        benchmark.stopMeasurement()
    }
    Benchmark("update_10k_grdb") { benchmark in
        let grdb = try GRDBPeer()
        try grdb.importItems(0..<n, chunk: 1_000)
        benchmark.startMeasurement()
        try grdb.updateItems(0..<n, chunk: 500, round: 1)
        benchmark.stopMeasurement()
    }

    // fetch everything and read every property
    Benchmark("fetch_10k_ours") { benchmark in
        let stack = try OursStack()
        try stack.importItems(0..<n, chunk: 1_000, reset: true)
        stack.drainMain()
        benchmark.startMeasurement()
        blackHole(try stack.fetchAll())
        benchmark.stopMeasurement()
    }
    Benchmark("fetch_10k_raw") { benchmark in
        let raw = try RawPeer()
        try raw.importItems(0..<n, chunk: 1_000)
        benchmark.startMeasurement()
        blackHole(try raw.fetchAll())
        benchmark.stopMeasurement()
    }
    Benchmark("fetch_10k_grdb") { benchmark in
        let grdb = try GRDBPeer()
        try grdb.importItems(0..<n, chunk: 1_000)
        benchmark.startMeasurement()
        blackHole(try grdb.fetchAll())
        benchmark.stopMeasurement()
    }

    // one background save of 10k updates merged into a view context holding 10 (save + merge)
    Benchmark("merge_10k_into_a_view_holding_10") { benchmark in
        let stack = try OursStack()
        try stack.importItems(0..<n, chunk: 1_000, reset: true)
        stack.drainMain()
        benchmark.startMeasurement()
        blackHole(try mergeMainQueueTimes(stack: stack, n: n, reps: 1))
        benchmark.stopMeasurement()
    }
}
