// swift-tools-version:6.0
// What linking and starting CrashCapture costs a program: tiny programs with and
// without it, and launch-cost, which runs them interleaved and prints the differences. Outside
// the main package so that neither the library nor CI builds it; scripts/bench.sh runs it.
import PackageDescription

let package = Package(
    name: "LaunchBench",
    dependencies: [
        .package(name: "CrashCapture", path: "../.."),
    ],
    targets: [
        // The five measured programs: keep them minimal (each prints one line). LaunchSupport is
        // the same in all five (a clock and a count of loaded objects, with a little C; no Foundation).
        // reporter links the CrashReporter product only (a Sentry-only user); analytics links
        // SensorsAnalytics too (a user of the analytics, and, Sentry-only, the user before the split).
        .target(name: "CLaunchSupport"),
        .target(name: "LaunchSupport", dependencies: ["CLaunchSupport"]),
        .executableTarget(name: "plain", dependencies: ["LaunchSupport"]),
        .executableTarget(name: "capture", dependencies: ["LaunchSupport", .product(name: "CrashCapture", package: "CrashCapture")]),
        .executableTarget(name: "foundation", dependencies: ["LaunchSupport"]),
        .executableTarget(name: "reporter", dependencies: ["LaunchSupport", .product(name: "CrashReporter", package: "CrashCapture")]),
        .executableTarget(
            name: "analytics",
            dependencies: [
                "LaunchSupport", .product(name: "CrashReporter", package: "CrashCapture"),
                .product(name: "SensorsAnalytics", package: "CrashCapture"),
            ]
        ),
        // Spawns one program and reports its wall time and peak RSS. In C, and linked statically
        // (SwiftPM links every executable with libswiftCore otherwise), so that its own RSS, which
        // a child's ru_maxrss inherits, stays far below the programs' (about 1.5 MiB; the linker
        // warns that a static glibc's dlopen needs the same glibc at run time: it runs here only).
        .executableTarget(name: "launch-probe", linkerSettings: [.unsafeFlags(["-static-executable"])]),
        // The main package's ProcessSpawning, its source compiled here (Sources/BenchSpawning is a
        // symbolic link to it): it is internal to that package, not a product. Another name than
        // ProcessSpawning, which `reporter` links through CrashReporter: target names are unique
        // across a package graph.
        .target(name: "BenchSpawning"),
        .executableTarget(
            name: "launch-cost",
            dependencies: ["BenchSpawning"],
            swiftSettings: []
        ),
    ]
)
