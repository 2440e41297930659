// Emit.swift — `crash-harness emit`: tracks numbered events through the tracking store, then flushes or crashes.
import Logging
import HostFacts
import ArgumentParser
import CCrashScenarios
import CrashCapture
import SensorsEvents
import CrashReporter
import SensorsAnalytics
import SensorsTracking
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension CrashHarness {
    struct Emit: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Tracks N events (properties seq = 0..N-1, run = an id unique to this invocation, also the tracker's run id) into a tracking store, then flushes and exits.",
            discussion: """
                Starts CrashReporting on the store (crash records go to <store>.records), so this run also ingests \
                records and dead run markers of earlier runs. With --crash-after K it crashes (null dereference) right \
                after event K is committed, leaving a record for the next run.
                """)

        @Option(help: "Number of events to track.")
        var count: Int

        @Option(help: "The tracking store file.")
        var store: String

        @Option(help: "Sensors /sa endpoint; without it events stay in the store.")
        var endpoint: String?

        @Option(name: .customLong("crash-after"), help: "Crash right after tracking event K (0-based seq).")
        var crashAfter: Int?

        @Option(name: .customLong("flush-timeout"), help: "Seconds allowed for the final flush.")
        var flushTimeout: Double = 10

        @Option(name: .customLong("retry-delay"), help: "First retry delay in seconds (tests use a short one).")
        var retryDelay: Double = 1

        @Option(name: .customLong("max-retry-delay"), help: "Longest retry delay in seconds.")
        var maxRetryDelay: Double = 300

        @Option(name: .customLong("run-id"), help: "The `run` property (default: a fresh UUID).")
        var runID: String?

        @Option(name: .customLong("ready-file"), help: "After the events are committed, create this file (tests wait for it).")
        var readyFile: String?

        @Flag(help: "After the events are committed (and --ready-file written), sleep until killed.")
        var hold = false

        @Flag(name: .customLong("grow-memory"), help: "After the events are committed (and --ready-file written), allocate and touch memory 1 MiB at a time until killed (the OOM killer, in a memory-limited cgroup); exit 4 if 4 GiB were touched and nothing killed it.")
        var growMemory = false

        @Option(name: .customLong("super-property"), help: "Register a super property (key=value, a string) before tracking; repeatable.")
        var superProperties: [String] = []

        @Flag(name: .customLong("host-info"), help: "Turn the tracker's includeHostInfo on ($hostname, $user on every event).")
        var hostInfo = false

        @Option(help: "With --crash-after: before the crash leave a breadcrumb holding TEXT-CRUMB, and crash with TEXT-STACK in a buffer on the crashing thread's stack (what a request body or a key in memory looks like to a crash record).")
        var secret: String?

        @Option(help: "Log in as this id before tracking.")
        var login: String?

        @Flag(help: "Print a JSON summary (run id, ingest report, shutdown result) on stdout.")
        var json = false

        @Flag(name: .customLong("exit-without-shutdown"), help: "After tracking, exit(0) without calling shutdown (the tracker's exit hook must end the run normally).")
        var exitWithoutShutdown = false

        func validate() throws {
            guard count >= 0 else { throw ValidationError("--count must be at least 0") }
            if let crashAfter, crashAfter < 0 || crashAfter >= count {
                throw ValidationError("--crash-after must be in 0..<count")
            }
            if let endpoint, URL(string: endpoint)?.scheme == nil { throw ValidationError("--endpoint must be a URL") }
        }

        /// A breadcrumb with `secret`-CRUMB, then a null dereference while `secret`-STACK fills a
        /// buffer on this thread's stack (written through a system call, so it is really there).
        static func crash(holding secret: String) -> Never {
            CrashHandler.leaveBreadcrumb("the user typed \(secret)-CRUMB", level: .info)
            let marker = Array("\(secret)-STACK ".utf8)
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 512) { buffer in
                for index in buffer.indices { buffer[index] = marker[index % marker.count] }
                _ = write(-1, buffer.baseAddress, buffer.count)   // keeps the stores (EBADF)
                cch_null_dereference()
            }
            fatalError("not reached")
        }

        func run() throws {
            let run = runID ?? UUID().uuidString.lowercased()
            // Sentry too when SENTRY_DSN is set.
            var configuration = CrashReporting.Configuration(recordDirectory: store + ".records", appName: "crash-harness",
                                                             appVersion: CrashCaptureLibrary.version)
            // The run id is the reporter's: capture writes it into a record, the tracker takes it.
            configuration.capture = { $0.runID = run }
            let retryDelay = retryDelay, maxRetryDelay = maxRetryDelay, flushTimeout = flushTimeout, hostInfo = hostInfo
            let analytics = SensorsAnalytics(storePath: store, endpoint: endpoint.flatMap(URL.init(string:))) { tracker in
                tracker.upload.initialRetryDelay = .seconds(retryDelay)
                tracker.upload.maxRetryDelay = .seconds(maxRetryDelay)
                tracker.shutdownTimeout = .milliseconds(Int64(flushTimeout * 1000))
                tracker.includeHostInfo = hostInfo
            }
            configuration.sinks = [analytics]
            let reporting = CrashReporting.start(configuration)
            guard let tracker = analytics.tracker else { throw ValidationError("no tracker for a configuration with a store") }
            if let login { tracker.login(login) }
            for pair in superProperties {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                tracker.registerSuperProperties([parts[0]: .string(parts.count > 1 ? parts[1] : "")])
            }
            for seq in 0..<count {
                tracker.track("HarnessEvent", properties: ["seq": .int(seq), "run": .string(run)])
                if seq == crashAfter {
                    tracker.waitUntilStored(timeout: .seconds(30))
                    if let secret { Self.crash(holding: secret) }
                    cch_null_dereference()
                }
            }
            if readyFile != nil || hold || growMemory {
                tracker.waitUntilStored(timeout: .seconds(30))
                if let readyFile { _ = FileManager.default.createFile(atPath: readyFile, contents: Data(run.utf8)) }
                if growMemory { Self.growMemoryUntilKilled() }
                while hold { sleep(60) }
            }
            if exitWithoutShutdown { Glibc.exit(0) }
            reporting.shutdown(timeout: .milliseconds(Int64(flushTimeout * 1000)))
            let stored = analytics.shutdownResult?.stored ?? false, uploaded = analytics.shutdownResult?.uploaded ?? false
            if json {
                let report = analytics.launchReport
                struct Summary: Encodable {
                    var run: String, stored: Bool, uploaded: Bool
                    var recordsIngested: [String], abnormalEnds: [String], recordsUnreadable: [String], errors: [String]
                }
                print(try HarnessJSON.text(Summary(run: run, stored: stored, uploaded: uploaded,
                                                   recordsIngested: report.recordsIngested, abnormalEnds: report.abnormalEnds,
                                                   recordsUnreadable: report.recordsUnreadable, errors: report.errors)))
            }
            if !stored || (endpoint != nil && !uploaded) { throw ExitCode(3) }
        }

        /// Touches every page of 1 MiB blocks (never freed) until the kernel kills the process;
        /// gives up with exit status 4 after 4 GiB, so that a run without a memory limit ends.
        static func growMemoryUntilKilled() -> Never {
            let block = 1 << 20
            var blocks: [UnsafeMutableRawPointer] = []
            while blocks.count < 4096 {
                guard let memory = malloc(block) else { break }
                memset(memory, 0xA5, block)
                blocks.append(memory)
            }
            withExtendedLifetime(blocks) { Glibc._exit(4) }
        }
    }
}
