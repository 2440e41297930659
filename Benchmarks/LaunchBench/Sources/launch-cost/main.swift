// main.swift — launch-cost: what linking and starting CrashCapture adds to a program's whole run.
//
//   launch-cost [ROUNDS]    ROUNDS interleaved rounds (default 40) after 3 warm-up rounds
//   LAUNCH_COST_BEFORE=DIR  also runs every row of a CrashCapture program with the programs of
//                           another build (DIR: its LaunchBench bin path), in the same rounds:
//                           before and after a change, side by side in one run
//
// Runs the programs beside it once per round, each round in a rotated order so that no row
// always follows the same one: plain; capture (also with CRASHCAPTURE_DISABLE=1, and with 63 and
// 64 records waiting); foundation; reporter (the CrashReporter product alone: Sentry only,
// nothing pending); analytics (CrashReporter + SensorsAnalytics: a store with nothing pending,
// a new directory) and analytics started Sentry-only (LAUNCH_BENCH_SENTRY_ALONE=1: what a
// Sentry-only user paid while CrashReporter held the analytics). It prints a markdown table:
// per row the median wall time (spawn to reaped), max RSS (wait4's ru_maxrss) and CPU time; the
// median of the per-round differences against the row's baseline (capture, reporter and the
// Sentry-only analytics against plain, analytics against foundation) beside the launch targets (Benchmarks/README.md, "Launch cost");
// the median time of the start call as the program measured it (CrashHandler.start alone;
// CrashReporting.start with its configuration, as one call); the shared objects it had
// loaded at its end (dl_iterate_phdr: the vDSO and the dynamic loader count, as in ldd).
//
// Each program is spawned by launch-probe (C), which times it and reads its rusage: a child's
// ru_maxrss is never below the RSS of the process that spawned it, so spawning straight from
// here would report this program's RSS for every row (launch-probe's own floor is printed).
// ChildProcess (the main package's ProcessSpawning, compiled here as BenchSpawning) starts
// launch-probe; it is not used for the timed spawn because it polls waitpid every millisecond
// and reads no rusage.
import Foundation
import BenchSpawning
#if canImport(Glibc)
import Glibc
#endif

let arguments = CommandLine.arguments
var rounds = 40
if arguments.count > 1 {
    guard arguments.count == 2, let value = Int(arguments[1]), value > 0 else {
        FileHandle.standardError.write(Data("usage: launch-cost [ROUNDS]   (default 40)\n".utf8))
        exit(64)
    }
    rounds = value
}
let warmUpRounds = 3
let sentryPort = LoopbackSentry.start()
// A Sentry as far as a real ingest over the network: every answer 50 ms late.
let slowSentryPort = LoopbackSentry.start(delayMilliseconds: 50)
let binDirectory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
let probe = binDirectory + "/launch-probe"
let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("launch-cost-\(getpid())").path
try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: scratch) }

/// Where a row's program is pointed (its first argument).
enum Directory {
    case none
    /// One directory for every run (created before the first).
    case shared(String)
    /// A path that does not exist yet, new for each run and removed after it.
    case new
    /// One directory for every run, holding this many records (copies of a real one) before each.
    case seeded(String, records: Int)
}

/// One row of the table: a program, how it is run, what it is compared with.
struct Row {
    var label: String
    let program: String
    /// Where the program is (this build's bin path, or LAUNCH_COST_BEFORE's).
    var programDirectory = binDirectory
    var directory: Directory = .none
    var disable = false
    /// More environment for the program (`LAUNCH_BENCH_SENTRY_ALONE=1`: analytics started with a DSN and no store).
    var environment: [String: String] = [:]
    /// Index of the row this one is compared with, run for run.
    var baseline: Int?
    /// What the program must report as `result=` (capture) or `capture=` (reporter).
    var expect: String?
    var wallTarget: Double?  // ms
    var rssTarget: Double?   // MiB
    var startTarget: Double? // µs
}

var rows = [
    Row(label: "plain", program: "plain"),
    Row(label: "capture", program: "capture", directory: .shared(scratch + "/capture"), baseline: 0,
        expect: "installed", wallTarget: 0.3, rssTarget: 1.5, startTarget: 150),
    Row(label: "capture, CRASHCAPTURE_DISABLE=1", program: "capture", directory: .shared(scratch + "/capture-disabled"),
        disable: true, baseline: 0, expect: "disabledByEnvironment"),
    // The bounded record directory: start lists it (and lstat's each file) when under its
    // bound (64 records); at the bound it folds 16 records, reading and parsing every record.
    Row(label: "capture, 63 records waiting", program: "capture", directory: .seeded(scratch + "/capture-63", records: 63), baseline: 0,
        expect: "installed"),
    Row(label: "capture, 64 records (start folds 16)", program: "capture", directory: .seeded(scratch + "/capture-64", records: 64), baseline: 0,
        expect: "installed"),
    Row(label: "foundation", program: "foundation"),
    // What each kind of user pays. A Sentry-only program (CrashReporter alone) against plain: it
    // imports no Foundation itself, so what CrashReporter loads is counted.
    // Release health off: with no crash pending, nothing is sent.
    Row(label: "reporter (Sentry only, sessions off), nothing pending", program: "reporter", directory: .shared(scratch + "/reporter"),
        environment: ["LAUNCH_BENCH_SESSIONS": "off"], baseline: 0, expect: "installed", wallTarget: 2, rssTarget: 5),
    // Release health on (the default), a Sentry on loopback that answers at once, and one that
    // answers 50 ms late: each launch learns that the last run ended. Before the sessions were
    // batched, each launch sent that session (libcurl loaded, one request) and shutdown waited
    // for it; now the session waits in its file (SessionBatching) and the launch sends nothing.
    Row(label: "reporter (Sentry only), sessions on, Sentry answering at once", program: "reporter",
        directory: .shared(scratch + "/reporter-sessions"),
        environment: ["LAUNCH_BENCH_DSN": "http://launchbench@127.0.0.1:\(sentryPort)/1"], baseline: 0, expect: "installed",
        wallTarget: nil),
    Row(label: "reporter (Sentry only), sessions on, Sentry answering 50 ms late", program: "reporter",
        directory: .shared(scratch + "/reporter-sessions-slow"),
        environment: ["LAUNCH_BENCH_DSN": "http://launchbench@127.0.0.1:\(slowSentryPort)/1"], baseline: 0, expect: "installed",
        wallTarget: nil),
    // The analytics (a Foundation program's, as its users' are) against foundation.
    Row(label: "analytics, nothing pending", program: "analytics", directory: .shared(scratch + "/analytics"), baseline: 5,
        expect: "installed", wallTarget: 3),
    Row(label: "analytics, new directory", program: "analytics", directory: .new, baseline: 5,
        expect: "installed"),
    // Before the split, in the same run: the Sentry-only start with the analytics linked (its store,
    // libsqlite3), against plain as the reporter row.
    Row(label: "analytics linked, Sentry only (before the split)", program: "analytics", directory: .shared(scratch + "/analytics-sentry"),
        environment: ["LAUNCH_BENCH_SENTRY_ALONE": "1"], baseline: 0, expect: "installed"),
]
// Before and after in one run: each CrashCapture row again with the other build's program, in a
// directory of its own, against the same baseline (plain and foundation link no CrashCapture).
if let before = ProcessInfo.processInfo.environment["LAUNCH_COST_BEFORE"], !before.isEmpty {
    for row in rows where row.baseline != nil {
        var twin = row
        twin.label = row.label + " — before"
        twin.programDirectory = before
        twin.wallTarget = nil
        twin.rssTarget = nil
        twin.startTarget = nil
        switch row.directory {
        case .shared(let path): twin.directory = .shared(path + "-before")
        case .seeded(let path, let records): twin.directory = .seeded(path + "-before", records: records)
        case .none, .new: break
        }
        rows.append(twin)
    }
}
for row in rows {
    if case .shared(let path) = row.directory { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
    if case .seeded(let path, _) = row.directory { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
}

/// One run's figures.
struct Sample {
    var wallMilliseconds: Double
    var maxRSSMebibytes: Double
    var cpuMilliseconds: Double
    var startMicroseconds: Double?
    /// capture: its configuration's init, just before start.
    var initMicroseconds: Double?
    var objects: Int?
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("launch-cost: \(message)\n".utf8))
    exit(1)
}

/// `key=value` fields of a line.
func fields(_ line: Substring) -> [String: String] {
    var result: [String: String] = [:]
    for word in line.split(separator: " ") {
        if let equals = word.firstIndex(of: "=") { result[String(word[..<equals])] = String(word[word.index(after: equals)...]) }
    }
    return result
}

var environment = ProcessInfo.processInfo.environment
environment.removeValue(forKey: "CRASHCAPTURE_DISABLE")
environment.removeValue(forKey: "SENTRY_DSN")
var runCount = 0

/// Runs `program` with `programArguments` under launch-probe; returns the program's own line and the probe's figures.
@MainActor func probeRun(_ program: String, _ programArguments: [String], environment: [String: String]) -> (line: Substring?, sample: Sample) {
    runCount += 1
    let output = scratch + "/out-\(runCount)"
    let errors = scratch + "/err-\(runCount)"
    defer {
        try? FileManager.default.removeItem(atPath: output)
        try? FileManager.default.removeItem(atPath: errors)
    }
    let child: ChildProcess
    do {
        child = try ChildProcess.run(probe, [program] + programArguments, environment: environment, stdout: output, stderr: errors, timeout: 60)
    } catch { fail("\(error)") }
    let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    let lines = text.split(separator: "\n")
    let stderrText = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
    guard child.ending == .exited(0), let probeLine = lines.last, probeLine.hasPrefix("launch-probe ") else {
        fail("\(program) \(programArguments.joined(separator: " ")): probe ended \(child.ending)\n\(text)\(stderrText)")
    }
    let figures = fields(probeLine)
    guard figures["status"] == "0", let wall = figures["wall_ns"].flatMap(Double.init),
          let rss = figures["maxrss_kib"].flatMap(Double.init), let cpu = figures["cpu_us"].flatMap(Double.init) else {
        fail("\(program) \(programArguments.joined(separator: " ")) did not exit 0: \(probeLine)\n\(text)\(stderrText)")
    }
    return (lines.count > 1 ? lines[lines.count - 2] : nil,
            Sample(wallMilliseconds: wall / 1e6, maxRSSMebibytes: rss / 1024, cpuMilliseconds: cpu / 1000))
}

/// A real record (the capture program's null dereference), copied into the seeded directories.
let seedRecord: String = {
    let directory = scratch + "/seed"
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    var seedEnvironment = environment
    seedEnvironment["SWIFT_BACKTRACE"] = "enable=no"
    let child = try? ChildProcess.run(binDirectory + "/capture", [directory, "crash"], environment: seedEnvironment, timeout: 60)
    guard child?.ending == .signaled(SIGSEGV),
          let name = (try? FileManager.default.contentsOfDirectory(atPath: directory))?.first(where: { $0.hasSuffix(".ccrec") }) else {
        fail("the capture program left no record to seed directories with (\(String(describing: child?.ending)))")
    }
    return directory + "/" + name
}()
var seedCount = 0

/// Copies of the seed record into `path` until it holds `records` of them (new names each time).
@MainActor func seed(_ path: String, records: Int) {
    let present = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { $0.hasSuffix(".ccrec") }.count
    for _ in present..<max(present, records) {
        seedCount += 1
        let name = "crash-\(1_700_000_000_000 + seedCount)-\(900_000 + seedCount)-\(900_000 + seedCount).ccrec"
        do { try FileManager.default.copyItem(atPath: seedRecord, toPath: path + "/" + name) } catch { fail("seeding \(path): \(error)") }
    }
}

@MainActor func run(_ row: Row) -> Sample {
    var childEnvironment = environment
    if row.disable { childEnvironment["CRASHCAPTURE_DISABLE"] = "1" }
    childEnvironment.merge(row.environment) { $1 }
    var directoryArguments: [String] = []
    var newDirectory: String?
    switch row.directory {
    case .none: break
    case .shared(let path): directoryArguments = [path]
    case .new:
        newDirectory = scratch + "/new-\(runCount + 1)"
        directoryArguments = [newDirectory!]
    case .seeded(let path, let records):
        seed(path, records: records)
        directoryArguments = [path]
    }
    defer { if let newDirectory { try? FileManager.default.removeItem(atPath: newDirectory) } }
    var (line, sample) = probeRun(row.programDirectory + "/" + row.program, directoryArguments, environment: childEnvironment)
    guard let line, line.hasPrefix(row.program + " ") else { fail("\(row.label): no line from \(row.program)") }
    let values = fields(line)
    if let expect = row.expect {
        let reported = values["result"] ?? values["capture"]
        guard reported == expect else { fail("\(row.label): start reported \(reported ?? "nothing"), expected \(expect): \(line)") }
    }
    sample.startMicroseconds = values["start_us"].flatMap(Double.init)
    sample.initMicroseconds = values["init_us"].flatMap(Double.init)
    sample.objects = values["objects"].flatMap(Int.init)
    if case .shared(let path) = row.directory, row.program == "reporter" || row.program == "analytics" {
        // Nothing pending for the next run but sessions: no record, and no run left without its end
        // (the run markers: this run's, ended; the next launch tells it and deletes it). The runs'
        // sessions wait in their files (SessionBatching: no run ended an hour ago here), one per
        // round before, none of them half-written.
        let sessions = (try? FileManager.default.contentsOfDirectory(atPath: path + "/records/sessions")) ?? []
        guard sessions.allSatisfy({ $0.hasSuffix(".envelope") }) else { fail("\(row.label): not a session file: \(sessions)") }
        let records = ((try? FileManager.default.contentsOfDirectory(atPath: path + "/records")) ?? [])
            .filter { !["runs", "sessions", "installation-id", "sentry-rate-limits", "sentry-discarded"].contains($0) }
        guard records.isEmpty else { fail("\(row.label): \(path)/records is not empty: \(records)") }
        let runs = (try? FileManager.default.contentsOfDirectory(atPath: path + "/records/runs")) ?? []
        guard runs.count <= 1, runs.allSatisfy({ $0.hasSuffix(".run") }) else { fail("\(row.label): runs not told: \(runs)") }
    }
    return sample
}

func quantile(_ values: [Double], _ q: Double) -> Double {
    let sorted = values.sorted()
    let position = q * Double(sorted.count - 1)
    let lower = Int(position.rounded(.down)), upper = Int(position.rounded(.up))
    return sorted[lower] + (sorted[upper] - sorted[lower]) * (position - Double(lower))
}
func median(_ values: [Double]) -> Double { quantile(values, 0.5) }

/// The 1-minute load average (/proc/loadavg), to tell a run on a busy machine from one on an idle one.
func loadAverage() -> String {
    ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").first.map(String.init) ?? "?"
}
let loadBefore = loadAverage()

// The probe's own floor: what ru_maxrss reports for a program that uses next to nothing.
let trivial = FileManager.default.isExecutableFile(atPath: "/bin/true") ? "/bin/true" : "/usr/bin/true"
let floorRSS = median((0..<5).map { _ in probeRun(trivial, [], environment: environment).sample.maxRSSMebibytes })

for round in 0..<warmUpRounds { for index in rows.indices { _ = run(rows[(index + round) % rows.count]) } }
var samples = Array(repeating: [Sample](), count: rows.count)
for round in 0..<rounds {
    for offset in rows.indices {
        let index = (offset + round) % rows.count
        samples[index].append(run(rows[index]))
    }
}

func check(_ value: Double, _ target: Double?) -> String {
    guard let target else { return "" }
    return value <= target ? " ✓" : " ✗"
}
func format(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }
func signed(_ value: Double, _ digits: Int) -> String { String(format: "%+.\(digits)f", value) }

print("Launch cost, \(rounds) interleaved rounds after \(warmUpRounds) warm-up rounds (every row once per round, the order rotating); medians."
      + (rounds < 40 ? " Fewer than the 40 rounds the targets are judged on." : ""))
print("Δ: median of the per-round differences against the row's baseline (p25…p75 of those differences in brackets); ✓/✗ against the launch targets.")
print("")
print("| program | baseline | wall ms | max RSS MiB | CPU ms | Δ wall ms | target | Δ max RSS MiB | target | start µs | target | shared objects |")
print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
for (index, row) in rows.enumerated() {
    let rowSamples = samples[index]
    var cells = [row.label, row.baseline.map { rows[$0].label } ?? "—",
                 format(median(rowSamples.map(\.wallMilliseconds)), 2),
                 format(median(rowSamples.map(\.maxRSSMebibytes)), 2),
                 format(median(rowSamples.map(\.cpuMilliseconds)), 2)]
    if let baseline = row.baseline {
        let wallDifferences = zip(rowSamples, samples[baseline]).map { $0.wallMilliseconds - $1.wallMilliseconds }
        let rssDifferences = zip(rowSamples, samples[baseline]).map { $0.maxRSSMebibytes - $1.maxRSSMebibytes }
        let wall = median(wallDifferences), rss = median(rssDifferences)
        cells += ["\(signed(wall, 2))\(check(wall, row.wallTarget)) (\(signed(quantile(wallDifferences, 0.25), 2))…\(signed(quantile(wallDifferences, 0.75), 2)))",
                  row.wallTarget.map { "≤ \(format($0, 1))" } ?? "—",
                  "\(signed(rss, 2))\(check(rss, row.rssTarget)) (\(signed(quantile(rssDifferences, 0.25), 2))…\(signed(quantile(rssDifferences, 0.75), 2)))",
                  row.rssTarget.map { "≤ \(format($0, 1))" } ?? "—"]
    } else {
        cells += ["—", "—", "—", "—"]
    }
    let starts = rowSamples.compactMap(\.startMicroseconds)
    if starts.isEmpty {
        cells += ["—", "—"]
    } else {
        let start = median(starts)
        cells += ["\(format(start, 1))\(check(start, row.startTarget))", row.startTarget.map { "≤ \(format($0, 0))" } ?? "—"]
    }
    cells.append(rowSamples.last?.objects.map(String.init) ?? "?")
    print("| " + cells.joined(separator: " | ") + " |")
}
print("")
for (index, row) in rows.enumerated() {
    let inits = samples[index].compactMap(\.initMicroseconds)
    if !inits.isEmpty { print("\(row.label): CrashHandler.Configuration's init before start took \(format(median(inits), 1)) µs (median; not in start µs).") }
}
print("load average (1 min) \(loadBefore) before, \(loadAverage()) after, on \(ProcessInfo.processInfo.activeProcessorCount) CPUs. "
      + "max RSS floor (launch-probe running \(trivial)): \(format(floorRSS, 2)) MiB. capture's directory exists and stays empty (the seeded ones hold 63 and 64 copies of a real record before each run); "
      + "\"nothing pending\": one directory reused by every run (prepared by the warm-up runs, no record, no dead run; analytics' store keeps "
      + "each run's $AppStart and $AppEnd: no endpoint); \"new directory\": a path that does not exist, new for each run; "
      + "the Sentry-only starts have a DSN whose port (127.0.0.1:9) is closed: with nothing pending nothing is sent.")


/// A Sentry on 127.0.0.1 that answers every request 200 (the sessions a reporter sends), on a
/// thread of its own: one connection at a time, the request read to its end, then (after
/// `delayMilliseconds`) answered and closed. Returns its port.
enum LoopbackSentry {
    static func start(delayMilliseconds: Int = 0) -> UInt16 {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        _ = listen(listener, 64)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        let port = UInt16(bigEndian: address.sin_port)
        let thread = Thread {
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { continue }
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 65536)
                // Headers, then Content-Length bytes of body.
                while true {
                    let count = read(connection, &buffer, buffer.count)
                    if count <= 0 { break }
                    received += buffer[0..<count]
                    let text = String(decoding: received, as: UTF8.self)
                    guard let end = text.range(of: "\r\n\r\n") else { continue }
                    let headers = text[..<end.lowerBound].lowercased()
                    let length = headers.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                        .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                    if received.count - text[..<end.upperBound].utf8.count >= length { break }
                }
                if delayMilliseconds > 0 { usleep(UInt32(delayMilliseconds) * 1000) }
                let answer = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".utf8)
                _ = write(connection, answer, answer.count)
                close(connection)
            }
        }
        thread.start()
        return port
    }
}
