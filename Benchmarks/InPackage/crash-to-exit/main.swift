// main.swift — crash-to-exit: wall time from process start to death by SIGSEGV, four ways, side by side.
//
// (a) no handler at all (Swift backtracer off), (b) the Swift runtime backtracer (the Linux
// default), (c) CrashCapture with the backtracer off, (d) both. Runs are interleaved
// (a b c d a b c d …) after a warm-up so that machine noise falls on every column alike.
// Prints median, min and max per configuration, (c)−(a) as CrashCapture's cost, and the
// size of the record (c) leaves. Then the same with 1, 10 and 100 threads that block every
// signal (only the ptrace helper can stop them), CrashCapture with the helper off and on.
// Then a crash at the end of a 50-deep async chain (and a 1-deep one as the control), alone and
// with 100 threads, the four configurations again: CrashCapture's handler time, record size and
// the async links it found on the crashed thread (at least 50 or the run fails).
// CRASH_TO_EXIT_BEFORE=<dir> adds (c') to the first table: CrashCapture as another build's
// crash-target in <dir> has it, interleaved with the rest: before and after a change in one run.
import CrashRecordFormat
import ProcessSpawning
import Foundation
#if canImport(Glibc)
import Glibc
#endif

let arguments = CommandLine.arguments
let runs = arguments.count > 1 ? Int(arguments[1]) ?? 30 : 30
let target = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    .appendingPathComponent("crash-target").path
let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("crash-to-exit-\(getpid())").path
try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: scratch) }

let crashTarget = target
struct Configuration {
    let label: String
    let capture: Bool
    let backtracer: Bool
    var target = crashTarget
}
var configurations = [
    Configuration(label: "(a) no handler", capture: false, backtracer: false),
    Configuration(label: "(b) Swift backtracer", capture: false, backtracer: true),
    Configuration(label: "(c) CrashCapture", capture: true, backtracer: false),
    Configuration(label: "(d) CrashCapture + backtracer", capture: true, backtracer: true),
]
if let before = ProcessInfo.processInfo.environment["CRASH_TO_EXIT_BEFORE"], !before.isEmpty {
    configurations.append(Configuration(label: "(c') CrashCapture, before", capture: true, backtracer: false, target: before + "/crash-target"))
}

var base = ProcessInfo.processInfo.environment
var recordSizes: [String: [Int]] = [:]
var writeMicros: [String: [Int]] = [:]
var startMicros: [Int] = []
@MainActor func once(_ configuration: Configuration) throws -> Double {
    var environment = base
    environment["SWIFT_BACKTRACE"] = configuration.backtracer ? "enable=yes,interactive=no,color=no,symbolicate=off" : "enable=no"
    let directory = scratch + "/" + UUID().uuidString
    let stderrPath = directory + ".stderr"
    if configuration.capture { environment["CRASH_TARGET_TIME_START"] = "1" }
    let child = try ChildProcess.run(configuration.target, configuration.capture ? ["capture", directory] : ["none"],
                                     environment: environment, stderr: stderrPath, timeout: 60, precise: true)
    if configuration.capture && !configuration.backtracer && configuration.target == crashTarget,
       let text = try? String(contentsOfFile: stderrPath, encoding: .utf8),
       let range = text.range(of: #"start took (\d+) us"#, options: .regularExpression) {
        startMicros.append(Int(text[range].split(separator: " ")[2]) ?? 0)
    }
    try? FileManager.default.removeItem(atPath: stderrPath)
    guard child.ending == .signaled(SIGSEGV) else {
        FileHandle.standardError.write(Data("crash-to-exit: \(configuration.label) ended \(child.ending)\n".utf8))
        exit(1)
    }
    if configuration.capture && !configuration.backtracer {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        guard files.count == 1, files[0].hasSuffix(".ccrec") else {
            FileHandle.standardError.write(Data("crash-to-exit: no complete record from \(configuration.label)\n".utf8))
            exit(1)
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/" + files[0])[.size] as? Int) ?? 0
        recordSizes[configuration.label, default: []].append(size)
        if let micros = (try? CrashRecordReader.read(path: directory + "/" + files[0]))?.writeMicroseconds {
            writeMicros[configuration.label, default: []].append(micros)
        }
    }
    try? FileManager.default.removeItem(atPath: directory)
    return child.seconds * 1000
}

for configuration in configurations { for _ in 0..<3 { _ = try once(configuration) } } // warm-up
var samples = Array(repeating: [Double](), count: configurations.count)
for _ in 0..<runs {
    for (index, configuration) in configurations.enumerated() { samples[index].append(try once(configuration)) }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
let medians = samples.map(median)
print("crash-to-exit, \(runs) interleaved runs each (ms from spawn to death by SIGSEGV)")
print("configuration                    median     min     max   vs (a)")
for (index, configuration) in configurations.enumerated() {
    let values = samples[index]
    print(configuration.label.padding(toLength: 30, withPad: " ", startingAt: 0)
          + String(format: "  %7.2f %7.2f %7.2f   %5.2fx", medians[index], values.min()!, values.max()!, medians[index] / medians[0]))
}
print(String(format: "CrashCapture's cost (c)-(a): %.2f ms; with the backtracer (d)-(b): %.2f ms",
             medians[2] - medians[0], medians[3] - medians[1]))
for (label, sizes) in recordSizes.sorted(by: { $0.key < $1.key }) {
    print("record size of \(label.prefix(4)): median \(sizes.sorted()[sizes.count / 2]) bytes")
}
if !startMicros.isEmpty {
    let sorted = startMicros.sorted()
    print("CrashHandler.start in a fresh process (c): median \(sorted[sorted.count / 2]) us, min \(sorted.first!) us, max \(sorted.last!) us")
}
for (label, micros) in writeMicros.sorted(by: { $0.key < $1.key }) {
    let sorted = micros.sorted()
    print("time inside the handler \(label.prefix(4)), signal to end of record: median \(sorted[sorted.count / 2]) us, min \(sorted.first!) us, max \(sorted.last!) us")
}

// MARK: - Threads that block every signal: the thread helper's cost

struct ThreadConfiguration {
    let label: String
    let capture: Bool
    let backtracer: Bool
    let helper: Bool
}
let threadConfigurations = [
    ThreadConfiguration(label: "no handler", capture: false, backtracer: false, helper: false),
    ThreadConfiguration(label: "Swift backtracer", capture: false, backtracer: true, helper: false),
    ThreadConfiguration(label: "CrashCapture, helper off", capture: true, backtracer: false, helper: false),
    ThreadConfiguration(label: "CrashCapture, helper on", capture: true, backtracer: false, helper: true),
]
var helperMicros: [Int: [Int]] = [:]
var helperFrames: [Int: Int] = [:]
@MainActor func once(_ configuration: ThreadConfiguration, threads: Int) throws -> Double {
    var environment = base
    environment["SWIFT_BACKTRACE"] = configuration.backtracer ? "enable=yes,interactive=no,color=no,symbolicate=off" : "enable=no"
    environment["CRASH_TARGET_THREADS"] = String(threads)
    if !configuration.helper { environment["CRASH_TARGET_NO_HELPER"] = "1" }
    let directory = scratch + "/" + UUID().uuidString
    let child = try ChildProcess.run(target, configuration.capture ? ["capture", directory] : ["none"],
                                     environment: environment, stderr: "/dev/null", timeout: 60, precise: true)
    guard child.ending == .signaled(SIGSEGV) else {
        FileHandle.standardError.write(Data("crash-to-exit: \(configuration.label), \(threads) threads, ended \(child.ending)\n".utf8))
        exit(1)
    }
    if configuration.helper {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        guard files.count == 1, let record = try? CrashRecordReader.read(path: directory + "/" + files[0]), record.completeness == .complete else {
            FileHandle.standardError.write(Data("crash-to-exit: no complete record with \(threads) threads\n".utf8))
            exit(1)
        }
        if let micros = record.writeMicroseconds { helperMicros[threads, default: []].append(micros) }
        helperFrames[threads] = record.threads.filter { $0.ptraced && !$0.frames.isEmpty }.count
    }
    try? FileManager.default.removeItem(atPath: directory)
    return child.seconds * 1000
}

let threadRuns = max(5, runs / 4)
print("")
print("crash-to-exit with threads that block every signal, \(threadRuns) interleaved runs each (median ms)")
print("threads   " + threadConfigurations.map { $0.label.padding(toLength: 26, withPad: " ", startingAt: 0) }.joined())
for threads in [1, 10, 100] {
    for configuration in threadConfigurations { _ = try once(configuration, threads: threads) } // warm-up
    var columns = Array(repeating: [Double](), count: threadConfigurations.count)
    for _ in 0..<threadRuns {
        for (index, configuration) in threadConfigurations.enumerated() { columns[index].append(try once(configuration, threads: threads)) }
    }
    print(String(threads).padding(toLength: 10, withPad: " ", startingAt: 0)
          + columns.map { String(format: "%7.2f", median($0)).padding(toLength: 26, withPad: " ", startingAt: 0) }.joined())
    let micros = (helperMicros[threads] ?? []).sorted()
    if !micros.isEmpty {
        print("          helper on: handler \(micros[micros.count / 2]) us median, \(helperFrames[threads] ?? 0) of \(threads - 1) blocking threads read with frames")
    }
}

// MARK: - A crash at the end of an async chain: the async context reading's cost

/// One kind of crash: where it happens (`asyncDepth` nil: on the main thread, as in the first
/// table; otherwise at the end of an async chain that deep, on a pool thread) and how many
/// threads `CRASH_TARGET_THREADS` asks for (`threads` - 1 of them block every signal). Every
/// process also has libdispatch's threads (two here, which block the stop signal: the helper
/// reads them). Depth 1 is the control for depth 50: the same threads, a pool thread's stack
/// window, all but the chain's length.
struct CrashShape {
    let label: String
    let asyncDepth: Int?
    let threads: Int
    /// Requests in flight with a CrashContext attached (`CRASH_TARGET_REQUESTS`), the crashing one included.
    var requests = 0
}
let asyncDepth = 50
let shapes = [
    CrashShape(label: "sync crash, main thread", asyncDepth: nil, threads: 1),
    CrashShape(label: "async depth 1", asyncDepth: 1, threads: 1),
    CrashShape(label: "async depth \(asyncDepth)", asyncDepth: asyncDepth, threads: 1),
    CrashShape(label: "async depth 1, 100 threads", asyncDepth: 1, threads: 100),
    CrashShape(label: "async depth \(asyncDepth), 100 threads", asyncDepth: asyncDepth, threads: 100),
    CrashShape(label: "async depth 1, 50 requests in flight", asyncDepth: 1, threads: 1, requests: 50),
]
/// What (c)'s records say, per shape.
struct AsyncFigures {
    var handlerMicros: [Int] = []
    var recordSizes: [Int] = []
    var longestChains: [Int] = []
    var ends: Set<String> = []
    var threadsWithFrames: [Int] = []
    var threadCounts: [Int] = []
}
var asyncFigures = Array(repeating: AsyncFigures(), count: shapes.count)
@MainActor func once(_ configuration: Configuration, shape index: Int) throws -> Double {
    let shape = shapes[index]
    var environment = base
    environment["SWIFT_BACKTRACE"] = configuration.backtracer ? "enable=yes,interactive=no,color=no,symbolicate=off" : "enable=no"
    if shape.threads > 1 { environment["CRASH_TARGET_THREADS"] = String(shape.threads) }
    if let depth = shape.asyncDepth { environment["CRASH_TARGET_ASYNC_DEPTH"] = String(depth) }
    if shape.requests > 0 { environment["CRASH_TARGET_REQUESTS"] = String(shape.requests) }
    let directory = scratch + "/" + UUID().uuidString
    let child = try ChildProcess.run(configuration.target, configuration.capture ? ["capture", directory] : ["none"],
                                     environment: environment, stderr: "/dev/null", timeout: 60, precise: true)
    guard child.ending == .signaled(SIGSEGV) else {
        FileHandle.standardError.write(Data("crash-to-exit: \(configuration.label), \(shape.label), ended \(child.ending)\n".utf8))
        exit(1)
    }
    if configuration.capture && !configuration.backtracer {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let path = directory + "/" + (files.first ?? "")
        guard files.count == 1, let record = try? CrashRecordReader.read(path: path), record.completeness == .complete,
              let crashed = record.crashedThread else {
            FileHandle.standardError.write(Data("crash-to-exit: no complete record from \(configuration.label), \(shape.label)\n".utf8))
            exit(1)
        }
        // The longest run of links from any chain's first context, across the chains it joins.
        let longest = crashed.asyncChains.map { crashed.asyncLinks(from: $0.firstContext).count }.max() ?? 0
        if let depth = shape.asyncDepth, longest < depth {
            FileHandle.standardError.write(Data("crash-to-exit: \(shape.label): the crashed thread's longest async chain has \(longest) links, fewer than \(depth)\n".utf8))
            exit(1)
        }
        if shape.requests > 0, record.requests?.crashed?.requestID != "req-0" || record.requests?.inFlight != shape.requests {
            FileHandle.standardError.write(Data("crash-to-exit: \(shape.label): the record does not name req-0 among \(shape.requests) in flight\n".utf8))
            exit(1)
        }
        if let micros = record.writeMicroseconds { asyncFigures[index].handlerMicros.append(micros) }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        asyncFigures[index].recordSizes.append(size)
        asyncFigures[index].longestChains.append(longest)
        if let chain = crashed.asyncChains.max(by: { $0.links.count < $1.links.count }) {
            asyncFigures[index].ends.insert("\(chain.end)")
        }
        asyncFigures[index].threadsWithFrames.append(record.threads.filter { !$0.crashed && !$0.frames.isEmpty }.count)
        asyncFigures[index].threadCounts.append(record.threads.count)
    }
    try? FileManager.default.removeItem(atPath: directory)
    return child.seconds * 1000
}

func middle(_ values: [Int]) -> Int { values.sorted()[values.count / 2] }
let asyncRuns = runs
print("")
print("crash-to-exit, crash at the end of an async chain (each level suspended once, in a Task, main thread asleep), "
      + "\(asyncRuns) interleaved runs each (median ms, + vs (a); every shape and configuration in one loop; "
      + "CrashCapture with the thread helper on; Swift backtracer with symbolicate=off as above)")
print("crash".padding(toLength: 38, withPad: " ", startingAt: 0) + configurations.map { $0.label.padding(toLength: 31, withPad: " ", startingAt: 0) }.joined())
for (index, _) in shapes.enumerated() { for configuration in configurations { _ = try once(configuration, shape: index) } } // warm-up
for index in asyncFigures.indices { asyncFigures[index] = AsyncFigures() }
var asyncSamples = Array(repeating: Array(repeating: [Double](), count: configurations.count), count: shapes.count)
for _ in 0..<asyncRuns {
    for index in shapes.indices {
        for (column, configuration) in configurations.enumerated() {
            asyncSamples[index][column].append(try once(configuration, shape: index))
        }
    }
}
for (index, shape) in shapes.enumerated() {
    let medians = asyncSamples[index].map(median)
    print(shape.label.padding(toLength: 38, withPad: " ", startingAt: 0)
          + medians.enumerated().map { column, value in
              (column == 0 ? String(format: "%7.2f", value) : String(format: "%7.2f (%+.2f)", value, value - medians[0]))
                  .padding(toLength: 31, withPad: " ", startingAt: 0)
          }.joined())
    let figures = asyncFigures[index]
    let micros = figures.handlerMicros.sorted()
    print("    (c): handler \(micros.isEmpty ? "?" : "\(middle(micros)) us median (\(micros.first!)–\(micros.last!))"), "
          + "record \(middle(figures.recordSizes)) bytes median, crashed thread's longest async chain "
          + "\(figures.longestChains.min() ?? 0)–\(figures.longestChains.max() ?? 0) links"
          + (figures.ends.isEmpty ? "" : " (ends: \(figures.ends.sorted().joined(separator: ", ")))")
          + ", \(middle(figures.threadsWithFrames)) of \(middle(figures.threadCounts) - 1) other threads with frames")
}
