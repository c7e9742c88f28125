// swift-tools-version: 6.0
// An app team's own merge policy and model, run through the Ambar workbench as a library (`make example`).
import PackageDescription

let package = Package(
    name: "custom-policy",
    dependencies: [.package(name: "Ambar", path: "../../..")],
    targets: [
        .target(name: "CustomPolicy", dependencies: [.product(name: "Workbench", package: "Ambar"), .product(name: "ObjectGraph", package: "Ambar")]),
        .executableTarget(name: "custom-policy", dependencies: ["CustomPolicy", .product(name: "Workbench", package: "Ambar")]),
    ]
)
