// main.swift — TrackingBench: track() latency, sustained store throughput, next-launch ingest + upload.
//
// Targets (the tracking store's own, from its design): track() p99 ≤ 20 µs on the caller; ≥ 50k events/s into the store;
// ingest + upload of 100 crash records to a loopback server ≤ 1 s. Results are printed, never asserted.
import CrashCapture
import SensorsEvents
import CrashReporter
import SensorsAnalytics
import SensorsTracking
import Foundation
#if canImport(Glibc)
import Glibc
#endif

func now() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func scratch(_ name: String) -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("trackingbench-\(getpid())-\(name)").path
    try? FileManager.default.removeItem(atPath: path)
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func percentile(_ sorted: [UInt64], _ p: Double) -> Double {
    Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1000
}

// The child mode: start CrashCapture in DIR and die of SIGSEGV, leaving one record.
if CommandLine.arguments.count == 3 && CommandLine.arguments[1] == "crash-child" {
    _ = try CrashHandler.start(.init(directory: CommandLine.arguments[2], appName: "bench", appVersion: "1.0"))
    raise(SIGSEGV)
    exit(70)
}

func trackLatency() throws {
    let directory = scratch("latency")
    var config = Tracker.Configuration(storePath: directory + "/s.sqlite", appName: "bench", appVersion: "1.0")
    config.limits.maxEvents = 10_000_000
    config.maxQueuedEvents = 1_000_000
    let tracker = try Tracker(config)
    let properties: [String: JSONScalar] = ["screen": .string("checkout"), "items": .int(3), "total": .double(19.99)]
    for _ in 0..<20_000 { tracker.track("Warmup", properties: properties) }
    tracker.waitUntilStored(timeout: .seconds(60))
    var samples: [UInt64] = []
    samples.reserveCapacity(200_000)
    for _ in 0..<20 {
        for _ in 0..<10_000 {
            let start = now()
            tracker.track("Purchase", properties: properties)
            samples.append(now() - start)
        }
        tracker.waitUntilStored(timeout: .seconds(60)) // not measured: keeps the queue from growing without bound
    }
    tracker.shutdown()
    let sorted = samples.sorted()
    print(String(format: "track() latency on the caller (%d calls, 3 properties, writer running): p50 %.2f µs, p99 %.2f µs, p99.9 %.2f µs, max %.1f µs",
                 sorted.count, percentile(sorted, 0.5), percentile(sorted, 0.99), percentile(sorted, 0.999), Double(sorted.last!) / 1000))
}

func throughput(count: Int, limit: Int) throws {
    let directory = scratch("throughput-\(limit)")
    var config = Tracker.Configuration(storePath: directory + "/s.sqlite", appName: "bench", appVersion: "1.0")
    config.limits.maxEvents = limit
    config.maxQueuedEvents = count + 10
    let tracker = try Tracker(config)
    tracker.waitUntilStored(timeout: .seconds(60))
    let properties: [String: JSONScalar] = ["screen": .string("checkout"), "items": .int(3), "total": .double(19.99)]
    let start = now()
    for i in 0..<count {
        var p = properties
        p["seq"] = .int(i)
        tracker.track("Purchase", properties: p)
    }
    tracker.waitUntilStored(timeout: .seconds(600))
    let seconds = Double(now() - start) / 1e9
    tracker.shutdown()
    let summary = try tracker.store.summary()
    print(String(format: "sustained store throughput (%d events tracked, committed, limit %d): %.0f events/s (%.2f s; pending %d, evicted %d)",
                 count, limit, Double(count) / seconds, seconds, summary.pending, summary.counters["evicted_ordinary"] ?? 0))
}

func ingestAndUpload(records: Int) throws {
    let directory = scratch("ingest")
    let recordDirectory = directory + "/records"
    try FileManager.default.createDirectory(atPath: recordDirectory, withIntermediateDirectories: true)
    // One real record from a real crash, copied under `records` distinct names (dead pids).
    let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    let pid = spawn(exe, ["crash-child", recordDirectory])
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    guard let original = try FileManager.default.contentsOfDirectory(atPath: recordDirectory).first(where: { $0.hasSuffix(".ccrec") }) else {
        print("ingest + upload: the crash child left no record (status \(status))")
        return
    }
    let bytes = try Data(contentsOf: URL(fileURLWithPath: recordDirectory + "/" + original))
    try FileManager.default.removeItem(atPath: recordDirectory + "/" + original)
    for i in 0..<records {
        try bytes.write(to: URL(fileURLWithPath: "\(recordDirectory)/crash-\(1_700_000_000_000 + i)-\(4_000_000 + i)-\(4_000_000 + i).ccrec"))
    }
    let server = try LoopbackServer()
    let start = now()
    var config = CrashReporting.Configuration(recordDirectory: recordDirectory, appName: "bench", appVersion: "1.0")
    config.sinks = [SensorsAnalytics(storePath: directory + "/s.sqlite", endpoint: server.url)]
    config.captureCrashes = false
    let reporting = CrashReporting.start(config)
    let flushed = reporting.tracker!.flush(timeout: .seconds(30))
    let seconds = Double(now() - start) / 1e9
    reporting.shutdown()
    server.stop()
    print(String(format: "next-launch ingest + upload of %d records to a loopback server: %.3f s (ingested %d, flushed %@, %d events in %d requests)",
                 records, seconds, reporting.analytics!.launchReport.recordsIngested.count, flushed ? "yes" : "NO",
                 server.eventCount, server.requestCount))
}

/// Upload throughput: `count` events already in the store, drained to a loopback server in
/// batches of 50 (gzip + base64 + form encoding + HTTP + delete after 200).
func uploadThroughput(count: Int) throws {
    let directory = scratch("upload")
    let server = try LoopbackServer()
    var config = Tracker.Configuration(storePath: directory + "/s.sqlite", appName: "bench", appVersion: "1.0")
    config.maxQueuedEvents = count + 10
    config.limits.maxEvents = count + 100
    let offline = try Tracker(config)  // no endpoint: fill the store first
    for i in 0..<count { offline.track("Purchase", properties: ["seq": .int(i), "screen": .string("checkout")]) }
    offline.waitUntilStored(timeout: .seconds(600))
    offline.shutdown()
    config.endpoint = server.url
    let start = now()
    let online = try Tracker(config)
    let flushed = online.flush(timeout: .seconds(600))
    let seconds = Double(now() - start) / 1e9
    online.shutdown()
    server.stop()
    print(String(format: "upload throughput to a loopback server: %.0f events/s (%d events in %.2f s, %d requests, flushed %@)",
                 Double(server.eventCount) / seconds, server.eventCount, seconds, server.requestCount, flushed ? "yes" : "NO"))
}

func spawn(_ path: String, _ arguments: [String]) -> pid_t {
    let argv = [path] + arguments
    var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
    var env = ProcessInfo.processInfo.environment
    env["SWIFT_BACKTRACE"] = "enable=no"
    var cEnv: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
    var pid: pid_t = 0
    posix_spawn(&pid, path, nil, nil, &cArgs, &cEnv)
    cArgs.forEach { free($0) }
    cEnv.forEach { free($0) }
    return pid
}

/// A minimal HTTP server on 127.0.0.1 that answers every request 200 and counts events.
final class LoopbackServer: @unchecked Sendable {
    private let fd: Int32
    private let lock = NSLock()
    private var events = 0
    private var requests = 0
    let port: UInt16
    var url: URL { URL(string: "http://127.0.0.1:\(port)/sa")! }
    var eventCount: Int { lock.withLock { events } }
    var requestCount: Int { lock.withLock { requests } }

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        listen(fd, 64)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = UInt16(bigEndian: address.sin_port)
        Thread { [self] in
            while true {
                let client = accept(self.fd, nil, nil)
                if client < 0 { if errno == EINTR { continue }; return }
                serve(client)
            }
        }.start()
    }

    func stop() { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var data = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        var headerEnd = -1
        var length = 0
        while true {
            let n = recv(client, &chunk, chunk.count, 0)
            if n <= 0 { return }
            data.append(contentsOf: chunk[0..<n])
            if headerEnd < 0, let range = String(decoding: data, as: UTF8.self).range(of: "\r\n\r\n") {
                let head = String(decoding: data, as: UTF8.self)[..<range.lowerBound]
                headerEnd = head.utf8.count + 4
                for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    length = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
                }
                if head.lowercased().contains("expect: 100-continue") { _ = send(client, "HTTP/1.1 100 Continue\r\n\r\n", 25, Int32(MSG_NOSIGNAL)) }
            }
            if headerEnd >= 0 && data.count - headerEnd >= length { break }
        }
        let body = String(decoding: data[headerEnd...], as: UTF8.self)
        let count = SensorsWire.decode(body: body).flatMap { try? JSONSerialization.jsonObject(with: Data($0.json.utf8)) as? [Any] }?.count ?? 0
        lock.withLock { events += count; requests += 1 }
        let response = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        _ = response.withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
    }
}

print("TrackingBench (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
try trackLatency()
try throughput(count: 300_000, limit: 10_000_000)
try throughput(count: 100_000, limit: 10_000)
try uploadThroughput(count: 20_000)
try ingestAndUpload(records: 100)
