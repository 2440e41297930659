// swift-tools-version:5.10
// The record parser's fuzz target, kept out of the main package: it only links with
// `-sanitize=fuzzer` (libFuzzer drives it). Run it with scripts/fuzz.sh.
import PackageDescription

let package = Package(
    name: "CrashCaptureFuzz",
    dependencies: [.package(name: "CrashCapture", path: "..")],
    targets: [
        .executableTarget(
            name: "record-fuzzer",
            dependencies: [
                .product(name: "SensorsEvents", package: "CrashCapture"),
                .product(name: "CrashRecordFormat", package: "CrashCapture"),
                .product(name: "CrashInspection", package: "CrashCapture"),
                .product(name: "CrashSentry", package: "CrashCapture"),
                .product(name: "CrashSymbolication", package: "CrashCapture"),
            ]
        ),
    ]
)
