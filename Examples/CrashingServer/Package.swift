// swift-tools-version:6.2
// The tests' real servers, each starting CrashCapture, attaching each request's crash context with
// its framework's middleware, and crashing in a route handler on request
// (Tests/CrashCaptureTests/ServerCrashTests.swift, ServerRequestsTests.swift):
//   crashing-server        Hummingbird 2 (CrashCaptureHummingbird, CrashCaptureServiceLifecycle; the
//                          reporter with --report)
//   crashing-vapor-server  Vapor 4 (CrashCaptureVapor; the reporter with --report)
//   crashing-grpc-server   grpc-swift 2 over SwiftNIO's HTTP/2 (CrashCaptureGRPC), and its client
// and ExampleCrashes, what both share (the crash, the stand-in tracer). A package of its own, so
// the main package never depends on a web framework; it depends on the main package as an
// adopter does, with the traits of the integrations it uses. One package for both servers:
// SwiftNIO and the rest they share are built once.
import Foundation
import PackageDescription

let package = Package(
    name: "CrashingServer",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "crashing-server", targets: ["crashing-server"]),
        .executable(name: "crashing-vapor-server", targets: ["crashing-vapor-server"]),
        .executable(name: "crashing-grpc-server", targets: ["crashing-grpc-server"]),
    ],
    dependencies: [
        .package(name: "CrashCapture", path: "../..", traits: ["Hummingbird", "Vapor", "GRPC", "ServiceLifecycle"]),
        .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport", from: "2.9.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/vapor", from: "4.122.3"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .target(
            name: "ExampleCrashes",
            dependencies: [
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "crashing-server",
            dependencies: [
                "ExampleCrashes",
                .product(name: "CrashCapture", package: "CrashCapture"),
                // Linked as a canary links it: off until CRASHCAPTURE_GUARDED_HEAP is set.
                .product(name: "CrashCaptureGuardedHeap", package: "CrashCapture"),
                .product(name: "CrashCaptureHummingbird", package: "CrashCapture"),
                .product(name: "CrashCaptureServiceLifecycle", package: "CrashCapture"),
                .product(name: "CrashReporter", package: "CrashCapture"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ]
        ),
        // The README's and the DocC articles' Swift blocks (scripts/snippets.py writes them here;
        // scripts/test.sh builds this target): documentation that no longer compiles fails the tests.
        .target(
            name: "DocSnippets",
            dependencies: [
                .product(name: "CrashCapture", package: "CrashCapture"),
                .product(name: "CrashReporter", package: "CrashCapture"),
                .product(name: "SensorsAnalytics", package: "CrashCapture"),
                .product(name: "CrashRecordFormat", package: "CrashCapture"),
                .product(name: "CrashCaptureHummingbird", package: "CrashCapture"),
                .product(name: "CrashCaptureVapor", package: "CrashCapture"),
                .product(name: "CrashCaptureServiceLifecycle", package: "CrashCapture"),
                .product(name: "CrashCaptureGRPC", package: "CrashCapture"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
            ]
        ),
        .executableTarget(
            name: "crashing-vapor-server",
            dependencies: [
                "ExampleCrashes",
                .product(name: "CrashCapture", package: "CrashCapture"),
                .product(name: "CrashCaptureVapor", package: "CrashCapture"),
                .product(name: "CrashReporter", package: "CrashCapture"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ]
        ),
        .executableTarget(
            name: "crashing-grpc-server",
            dependencies: [
                "ExampleCrashes",
                .product(name: "CrashCapture", package: "CrashCapture"),
                .product(name: "CrashCaptureGRPC", package: "CrashCapture"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
            ]
        ),
    ]
)

// The server pages' whole programs (CrashReporter.docc's HummingbirdServers.md and VaporServers.md):
// scripts/snippets.py writes each page's `// main.swift` block to Sources/GettingStarted<Page>/main.swift
// (not committed) and checks that the products below are the ones the page's Package.swift block
// lists; scripts/test.sh builds them. A target is declared only once its main.swift is there, so a
// fresh clone builds the servers above before snippets.py has run. SwiftPM caches what this file
// evaluates to by its text, not by those files: build them with `--manifest-cache none`.
let pageServers: [(name: String, dependencies: [Target.Dependency])] = [
    ("GettingStartedHummingbird", [
        .product(name: "CrashReporter", package: "CrashCapture"),
        .product(name: "CrashCaptureHummingbird", package: "CrashCapture"),
        .product(name: "CrashCaptureServiceLifecycle", package: "CrashCapture"),
        .product(name: "Hummingbird", package: "hummingbird"),
    ]),
    ("GettingStartedVapor", [
        .product(name: "CrashReporter", package: "CrashCapture"),
        .product(name: "CrashCaptureVapor", package: "CrashCapture"),
        .product(name: "Vapor", package: "vapor"),
    ]),
]
for server in pageServers where FileManager.default.fileExists(atPath: Context.packageDirectory + "/Sources/\(server.name)/main.swift") {
    package.targets.append(.executableTarget(name: server.name, dependencies: server.dependencies))
}
