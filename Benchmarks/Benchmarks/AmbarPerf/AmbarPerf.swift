// The quick set under package-benchmark: wall clock, CPU, malloc counts and resident memory of each peer on
// 10,000 items, with committed static thresholds (Benchmarks/Thresholds/). Setup (fresh stores, seeding) is
// outside the measurement.
import Benchmark
import PerfKit

let benchmarks: @Sendable () -> Void = {
    let n = 10_000
    let tolerances: [BenchmarkMetric: BenchmarkThresholds] = [
        // Times are noisy on a shared 2-core machine; counts are nearly deterministic.
        .wallClock: .init(relative: [.p90: 50]),
        .cpuTotal: .init(relative: [.p90: 50]),
        .mallocCountTotal: .init(relative: [.p90: 5]),
        .peakMemoryResident: .init(relative: [.p90: 25]),
    ]
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .peakMemoryResident],
        timeUnits: .milliseconds,
        warmupIterations: 1,
        maxDuration: .seconds(10),
        maxIterations: 5,
        thresholds: tolerances)

    // import: commit every 1,000
    Benchmark("import 10k ours") { benchmark in
        let stack = try OursStack()
        benchmark.startMeasurement()
        try stack.importItems(0..<n, chunk: 1_000, reset: false)
        stack.drainMain()
        benchmark.stopMeasurement()
    }
    Benchmark("import 10k raw") { benchmark in
        let raw = try RawPeer()
        benchmark.startMeasurement()
        try raw.importItems(0..<n, chunk: 1_000)
        benchmark.stopMeasurement()
    }
    Benchmark("import 10k grdb") { benchmark in
        let grdb = try GRDBPeer()
        benchmark.startMeasurement()
        try grdb.importItems(0..<n, chunk: 1_000)
        benchmark.stopMeasurement()
    }

    // update by unique ID: commit every 500
    Benchmark("update 10k ours") { benchmark in
        let stack = try OursStack()
        try stack.importItems(0..<n, chunk: 1_000, reset: true)
        stack.drainMain()
        benchmark.startMeasurement()
        try stack.updateItems(0..<n, chunk: 500, round: 1)
        stack.drainMain()
        benchmark.stopMeasurement()
    }
    Benchmark("update 10k raw") { benchmark in
        let raw = try RawPeer()
        try raw.importItems(0..<n, chunk: 1_000)
        benchmark.startMeasurement()
        try raw.updateItems(0..<n, chunk: 500, round: 1)
        benchmark.stopMeasurement()
    }
    Benchmark("update 10k grdb") { benchmark in
        let grdb = try GRDBPeer()
        try grdb.importItems(0..<n, chunk: 1_000)
        benchmark.startMeasurement()
        try grdb.updateItems(0..<n, chunk: 500, round: 1)
        benchmark.stopMeasurement()
    }

    // fetch everything and read every property
    Benchmark("fetch 10k ours") { benchmark in
        let stack = try OursStack()
        try stack.importItems(0..<n, chunk: 1_000, reset: true)
        stack.drainMain()
        benchmark.startMeasurement()
        blackHole(try stack.fetchAll())
        benchmark.stopMeasurement()
    }
    Benchmark("fetch 10k raw") { benchmark in
        let raw = try RawPeer()
        try raw.importItems(0..<n, chunk: 1_000)
        benchmark.startMeasurement()
        blackHole(try raw.fetchAll())
        benchmark.stopMeasurement()
    }
    Benchmark("fetch 10k grdb") { benchmark in
        let grdb = try GRDBPeer()
        try grdb.importItems(0..<n, chunk: 1_000)
        benchmark.startMeasurement()
        blackHole(try grdb.fetchAll())
        benchmark.stopMeasurement()
    }

    // one background save of 10k updates merged into a view context holding 10 (save + merge)
    Benchmark("merge 10k into a view holding 10") { benchmark in
        let stack = try OursStack()
        try stack.importItems(0..<n, chunk: 1_000, reset: true)
        stack.drainMain()
        benchmark.startMeasurement()
        blackHole(try mergeMainQueueTimes(stack: stack, n: n, reps: 1))
        benchmark.stopMeasurement()
    }
}
