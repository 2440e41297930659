// swift-tools-version:6.2
// A small HTTP server (Vapor 4) that starts CrashCapture, attaches each request's crash context
// with CrashCaptureVapor's middleware and crashes in a route handler on request: the tests' real
// Vapor server (Tests/CrashCaptureTests/ServerRequestsTests.swift). A package of its own, so the
// main package never depends on Vapor; it depends on the main package as an adopter does, with
// the "Vapor" trait.
import PackageDescription

let package = Package(
    name: "CrashingVaporServer",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "crashing-vapor-server", targets: ["crashing-vapor-server"]),
    ],
    dependencies: [
        .package(name: "CrashCapture", path: "../..", traits: ["Vapor"]),
        .package(url: "https://github.com/vapor/vapor", from: "4.122.3"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        .executableTarget(
            name: "crashing-vapor-server",
            dependencies: [
                .product(name: "CrashCapture", package: "CrashCapture"),
                .product(name: "CrashCaptureVapor", package: "CrashCapture"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ]
        ),
    ]
)
