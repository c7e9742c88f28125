// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "AmbarBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Ambar", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // The workloads of every peer, shared by ambar-perf and the package-benchmark targets.
        .target(
            name: "PerfKit",
            dependencies: [
                .product(name: "Ambar", package: "Ambar"),
                .product(name: "ObjectGraph", package: "Ambar"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        // jemalloc's mallctl (a copy of the workbench's CJemalloc shim): linking it makes jemalloc the allocator.
        .systemLibrary(name: "CJemallocPerf", pkgConfig: "jemalloc", providers: [.apt(["libjemalloc-dev"])]),
        // One process, every comparison, one table; memory peaks from jemalloc's statistics.
        .executableTarget(
            name: "ambar-perf",
            dependencies: ["PerfKit", "CJemallocPerf"]
        ),
        // package-benchmark: `swift package benchmark` (thresholds in Thresholds/).
        .executableTarget(
            name: "AmbarPerf",
            dependencies: ["PerfKit", .product(name: "Benchmark", package: "benchmark")],
            path: "Benchmarks/AmbarPerf",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
