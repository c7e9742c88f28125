// swift-tools-version: 6.0
import PackageDescription

// `make tsan` builds without jemalloc (AMBAR_WITHOUT_JEMALLOC): its allocator and ThreadSanitizer's cannot share
// a process. The memory probe then reports no jemalloc figures.
let jemalloc: [Target.Dependency] = Context.environment["AMBAR_WITHOUT_JEMALLOC"] == nil ? ["CJemalloc"] : []

let package = Package(
    name: "Ambar",
    // Apple platforms only matter to the Core Data replay (TraceReplayCoreData, ambar-calibrate): the throwing
    // `performAndWait`, batch insert and history fetch requests it uses need these (never built there yet).
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "ObjectGraph", targets: ["ObjectGraph"]),
        .library(name: "XcodeModel", targets: ["XcodeModel"]),
        .library(name: "Ambar", targets: ["Ambar"]),
        .library(name: "Workbench", targets: ["Workbench"]),
        .library(name: "TraceReplay", targets: ["TraceReplay"]),
        .executable(name: "ambar-bench", targets: ["ambar-bench"]),
        .executable(name: "ambar-calibrate", targets: ["ambar-calibrate"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/yaslab/CSV.swift", from: "2.5.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CJemalloc",
            pkgConfig: "jemalloc",
            providers: [.apt(["libjemalloc-dev"])]
        ),
        .target(name: "CObjectRuntime"),
        // The model file format (`ModelFile`), Foundation only: ObjectGraph builds models from it, and the operation
        // trace carries a run's model in it.
        .target(name: "ModelSchema"),
        .target(
            name: "ObjectGraph",
            dependencies: ["CSQLite", "CObjectRuntime", "ModelSchema"]
        ),
        // The reader of Xcode's model source (`.xcdatamodeld`, `.xcdatamodel`): a target of its own, so that only its
        // users link Foundation's XML parser.
        .target(name: "XcodeModel", dependencies: ["ModelSchema", "ObjectGraph"]),
        .target(
            name: "Ambar",
            dependencies: ["ObjectGraph"]
        ),
        // SplitMix64 for the seeded workloads, the kill tests and the seeded tests: not part of the Core Data API.
        .target(name: "SeededRandom"),
        // ArgumentParser's main with bad input as an exit code of the tool's own, for ambar-bench and ambar-crash.
        .target(name: "CommandShell", dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // The operation trace and its replay (Docs/calibration.md): shared by every replayer, Foundation only; its
        // model is ModelSchema's, the one ObjectGraph reads.
        .target(name: "TraceReplay", dependencies: ["ModelSchema"]),
        // The replay over Apple's Core Data and its tool (Docs/calibration.md "The Apple side"): every source is
        // inside `#if canImport(CoreData)`, so on Linux they are an empty module and a tool that says it needs
        // Core Data. Never compiled or run on an Apple platform here.
        .target(name: "TraceReplayCoreData", dependencies: ["TraceReplay"]),
        .executableTarget(name: "ambar-calibrate", dependencies: ["TraceReplay", "TraceReplayCoreData"]),
        .target(
            name: "Workbench",
            dependencies: ["Ambar", "ObjectGraph", "XcodeModel", "TraceReplay", "SeededRandom"] + jemalloc + [
                .product(name: "Yams", package: "Yams"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "CSV", package: "CSV.swift"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .executableTarget(
            name: "ambar-bench",
            dependencies: ["Workbench", "ObjectGraph", "TraceReplay", "CommandShell", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .executableTarget(
            name: "ambar-crash",
            dependencies: ["Ambar", "ObjectGraph", "SeededRandom", "CommandShell", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(
            name: "ObjectGraphTests",
            dependencies: ["ObjectGraph", "SeededRandom"]
        ),
        .testTarget(
            name: "XcodeModelTests",
            dependencies: ["XcodeModel", "ObjectGraph"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "AmbarTests",
            dependencies: ["Ambar", "ObjectGraph", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(
            name: "WorkbenchTests",
            dependencies: ["Workbench", "Ambar", "ObjectGraph", "TraceReplay", "SeededRandom", .product(name: "Yams", package: "Yams")],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "ReliabilityTests",
            dependencies: ["ambar-crash", "Workbench", "Ambar", "ObjectGraph", "SeededRandom"]
        ),
    ]
)

// Strict settings for every target, in one place.
for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
