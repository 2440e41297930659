// swift-tools-version:6.1
// CrashCapture's benchmarks, outside the main package so that neither the library nor CI
// builds ordo-one/benchmark. Run everything with scripts/bench.sh from the repository root.
import PackageDescription

let package = Package(
    name: "CaptureBench",
    dependencies: [
        .package(name: "CrashCapture", path: "../.."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "crash-target",
            dependencies: [.product(name: "CrashCapture", package: "CrashCapture")]
        ),
        .executableTarget(
            name: "crash-to-exit",
            dependencies: [
                .product(name: "CrashCapture", package: "CrashCapture"),
                .product(name: "CrashSymbolication", package: "CrashCapture"),
                .product(name: "ProcessSpawning", package: "CrashCapture"),
            ]
        ),
        .executableTarget(
            name: "CaptureBenchmarks",
            dependencies: [
                .product(name: "CrashCapture", package: "CrashCapture"),
                .product(name: "CrashSymbolication", package: "CrashCapture"),
                .product(name: "ProcessSpawning", package: "CrashCapture"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CaptureBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v5]
)
