// swift-tools-version:6.2
// A small HTTP server (Hummingbird 2) that starts CrashCapture and crashes in a route handler on
// request: the tests' real server (Tests/CrashCaptureTests/ServerCrashTests.swift,
// ServerRequestsTests.swift). A package of its own, so the main package never depends on
// Hummingbird; it depends on the main package as an adopter does, with the traits of the
// integrations it uses.
import PackageDescription

let package = Package(
    name: "CrashingServer",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "crashing-server", targets: ["crashing-server"]),
    ],
    dependencies: [
        .package(name: "CrashCapture", path: "../..", traits: ["Hummingbird", "ServiceLifecycle"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        .executableTarget(
            name: "crashing-server",
            dependencies: [
                .product(name: "CrashCapture", package: "CrashCapture"),
                .product(name: "CrashCaptureHummingbird", package: "CrashCapture"),
                .product(name: "CrashCaptureServiceLifecycle", package: "CrashCapture"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ]
        ),
    ]
)
