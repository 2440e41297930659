// CaptureBenchmarks.swift — in-process costs: install, breadcrumbs. (Symbolication's is the main
// package's symbolication-bench: CrashSymbolication is not a product.)
import Benchmark
import CrashCapture
import Foundation

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, .throughput],
        maxDuration: .seconds(3), maxIterations: 100_000)

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("capture-bench-install-\(getpid())").path

    Benchmark("install: CrashHandler.start + stop") { benchmark in
        for _ in benchmark.scaledIterations {
            _ = try CrashHandler.start(.init(directory: directory, appName: "bench", appVersion: "1.0"))
            CrashHandler.stop()
        }
    }

    Benchmark("breadcrumb: leaveBreadcrumb, 1000 calls", configuration: .init(metrics: [.wallClock, .mallocCountTotal])) { benchmark in
        for _ in benchmark.scaledIterations {
            for index in 0..<1000 {
                CrashHandler.leaveBreadcrumb(index & 1 == 0 ? "request handled in 3 ms" : "cache miss for key user:42")
            }
        }
    }
}
