// swift-tools-version:6.1
// CrashCapture's in-process benchmarks through ordo-one/benchmark (install, breadcrumbs), outside
// the main package so that neither the library nor CI builds ordo-one/benchmark. The benchmarks
// over the main package's internal modules (crash-to-exit with its crash-target, symbolication)
// are targets of the main package, in Benchmarks/InPackage. Run everything with scripts/bench.sh
// from the repository root.
import PackageDescription

let package = Package(
    name: "CaptureBench",
    dependencies: [
        .package(name: "CrashCapture", path: "../.."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "CaptureBenchmarks",
            dependencies: [
                .product(name: "CrashCapture", package: "CrashCapture"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CaptureBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
