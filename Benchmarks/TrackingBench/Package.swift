// swift-tools-version:5.10
// Benchmarks for the tracking store: a separate package so benchmark-only code stays out of the root.
// Run: swift run -c release --package-path Benchmarks/TrackingBench
import PackageDescription

let package = Package(
    name: "TrackingBench",
    dependencies: [.package(name: "CrashCapture", path: "../..")],
    targets: [
        .executableTarget(
            name: "TrackingBench",
            dependencies: [
                .product(name: "SensorsTracking", package: "CrashCapture"),
                .product(name: "CrashReporter", package: "CrashCapture"),
                .product(name: "CrashCapture", package: "CrashCapture"),
                .product(name: "SensorsEvents", package: "CrashCapture"),
            ]
        ),
    ]
)
