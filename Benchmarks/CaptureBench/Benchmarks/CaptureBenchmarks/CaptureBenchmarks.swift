// CaptureBenchmarks.swift — in-process costs: install, breadcrumbs, request contexts. (Symbolication's is the main
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

    // A request's context as a server middleware builds it: a UUID request id, a route, a path
    // and a W3C trace continued from the caller's traceparent.
    func requestContext() -> CrashContext {
        var context = CrashContext(requestID: "8f3a9c2e-1b7d-4e0a-9f6b-2c5d8e1a3b4c", method: "GET", route: "/orders/{id}", path: "/orders/42")
        context.continueTrace(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        return context
    }
    let context = requestContext()

    Benchmark("request context: withValue around an empty request (attach, bind, check, detach)",
              configuration: .init(metrics: [.wallClock, .mallocCountTotal], maxIterations: 1_000_000)) { benchmark async in
        for _ in benchmark.scaledIterations {
            await CrashContext.withValue(context) { blackHole(benchmark) }
        }
    }

    Benchmark("request context: built from a traceparent, then withValue (what a middleware does per request)",
              configuration: .init(metrics: [.wallClock, .mallocCountTotal], maxIterations: 1_000_000)) { benchmark async in
        for _ in benchmark.scaledIterations {
            await CrashContext.withValue(requestContext()) { blackHole(benchmark) }
        }
    }

    Benchmark("request context: withThreadValue around an empty call",
              configuration: .init(metrics: [.wallClock, .mallocCountTotal], maxIterations: 1_000_000)) { benchmark in
        for _ in benchmark.scaledIterations {
            CrashContext.withThreadValue(context) { blackHole(benchmark) }
        }
    }
}
