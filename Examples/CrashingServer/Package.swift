// swift-tools-version:6.0
// A small HTTP server (Hummingbird 2) that starts CrashCapture and crashes in a route handler on
// request: the tests' real server (Tests/CrashCaptureTests/ServerCrashTests.swift). A package of
// its own, so the main package never depends on Hummingbird.
import PackageDescription

let package = Package(
    name: "CrashingServer",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "crashing-server", targets: ["crashing-server"]),
    ],
    dependencies: [
        .package(name: "CrashCapture", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "crashing-server",
            dependencies: [
                .product(name: "CrashCapture", package: "CrashCapture"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
    ]
)
