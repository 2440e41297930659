// swift-tools-version:5.10
import PackageDescription

let package = Package(
    name: "CrashCapture",
    products: [
        .library(name: "CrashCapture", targets: ["CrashCapture"]),
        .executable(name: "crash-harness", targets: ["crash-harness"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // The only code that runs after a fatal signal. C, async-signal-safe, at the top level.
        .target(
            name: "CShims",
            path: "CShims",
            cSettings: [.unsafeFlags(["-fno-omit-frame-pointer"])],
            linkerSettings: [.linkedLibrary("unwind")]
        ),
        .target(
            name: "CrashCapture",
            dependencies: ["CShims", .product(name: "Logging", package: "swift-log")]
        ),
        // Offline symbolication by build-id with the toolchain's llvm-symbolizer.
        .target(name: "CrashSymbolication", dependencies: ["CrashCapture"]),
        // Deliberate crashes for the harness, in C so each dies exactly as its name says.
        .target(name: "CCrashScenarios", path: "Sources/CCrashScenarios"),
        // The one scenario table, the runner and the verifier: used by crash-harness and the tests.
        .target(
            name: "CrashScenarios",
            dependencies: [
                "CrashCapture", "CCrashScenarios", "CrashSymbolication",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "crash-harness",
            dependencies: [
                "CrashCapture", "CrashScenarios", "CrashSymbolication",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "CrashCaptureTests",
            dependencies: ["CrashCapture", "CShims", "CrashScenarios", "CrashSymbolication", "crash-harness"]
        ),
    ]
)
