// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Ambar",
    products: [
        .library(name: "ObjectGraph", targets: ["ObjectGraph"]),
        .library(name: "Ambar", targets: ["Ambar"]),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(
            name: "ObjectGraph",
            dependencies: ["CSQLite"]
        ),
        .target(
            name: "Ambar",
            dependencies: ["ObjectGraph"]
        ),
        .testTarget(
            name: "ObjectGraphTests",
            dependencies: ["ObjectGraph"]
        ),
        .testTarget(
            name: "AmbarTests",
            dependencies: ["Ambar", "ObjectGraph"]
        ),
    ]
)

// Strict settings for every target, in one place.
for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
