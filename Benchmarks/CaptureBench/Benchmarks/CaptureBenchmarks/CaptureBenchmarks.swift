// CaptureBenchmarks.swift — in-process costs: install, breadcrumbs, symbolication of a 64-frame record.
import Benchmark
import CrashCapture
import CrashSymbolication
import ProcessSpawning
import Foundation

/// A real 64-frame record: crash-target (built next to this benchmark) dies under 60 nested calls.
func makeDeepRecord() throws -> CrashRecord {
    let bin = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("capture-bench-\(getpid())").path
    try? FileManager.default.removeItem(atPath: directory)
    var environment = ProcessInfo.processInfo.environment
    environment["SWIFT_BACKTRACE"] = "enable=no"
    _ = try ChildProcess.run(bin.appendingPathComponent("crash-target").path, ["deep", directory], environment: environment)
    let name = try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasSuffix(".ccrec") }
    guard let name else { throw CocoaError(.fileNoSuchFile) }
    return try CrashRecordReader.read(path: directory + "/" + name)
}

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

    let record = try? makeDeepRecord()
    let warm = try? Symbolicator()
    Benchmark("symbolicate: 64-frame record, warm", configuration: .init(metrics: [.wallClock], maxIterations: 200)) { benchmark in
        guard let record, let warm, let thread = record.crashedThread else { return }
        precondition(thread.frames.count >= 60, "expected a deep record, got \(thread.frames.count) frames")
        for _ in benchmark.scaledIterations {
            blackHole(warm.symbolicate(frames: thread.frames, firstIsExact: true, images: record.images))
        }
    }

    Benchmark("symbolicate: 64-frame record, cold (new Symbolicator)", configuration: .init(metrics: [.wallClock], maxIterations: 200)) { benchmark in
        guard let record, let thread = record.crashedThread else { return }
        for _ in benchmark.scaledIterations {
            let cold = try Symbolicator()
            blackHole(cold.symbolicate(frames: thread.frames, firstIsExact: true, images: record.images))
        }
    }
}
