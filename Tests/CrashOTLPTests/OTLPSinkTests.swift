// OTLPSinkTests.swift — crashes into OpenTelemetry: real crashes of the harness (child processes),
// the next launch (`crash-harness deliver`, configured by the OTEL_* variables alone) or the OTLP
// sink in this process sending them to a collector on 127.0.0.1, and every request decoded with
// OpenTelemetry's own schema (opentelemetry-proto, Tests/Oracles/otlp_logs.py): the log record's
// fields, the resource, the crashed request's trace, the data policy, retries and Retry-After, a
// partial success, a 4xx, and a collector that is down for two launches.
@testable import CrashReporter
import CrashOTLP
import CrashRecordFormat
import CrashScenarios
import Foundation
import HostFacts
import ProcessSpawning
import TestSupport
import XCTest
@testable import CrashReporterOTLP

final class OTLPSinkTests: XCTestCase {
    // MARK: support

    /// A crash of `scenario` (a child process dying by its signal) recorded into `directory`.
    @discardableResult
    func crash(_ scenario: String, into directory: String) throws -> String {
        let before = Set(try RecordFileName.names(in: directory))
        let child = try ChildProcess.run(BuiltProducts.harness, ["run", scenario, "--dir", directory],
                                         environment: ["SWIFT_BACKTRACE": "enable=no"], timeout: 60)
        guard case .signaled = child.ending else {
            throw Tools.Failure(description: "\(scenario) ended \(child.ending), not by a signal")
        }
        usleep(2000) // distinct millisecond names
        return try XCTUnwrap(try RecordFileName.names(in: directory).first { !before.contains($0) && RecordFileName($0) != nil })
    }

    /// One launch of the harness's CrashReporting over `records` with `environment` (the OTEL_*
    /// variables): its JSON summary.
    func deliver(_ records: String, environment: [String: String], _ arguments: [String] = []) throws -> [String: Any] {
        let output = try Scratch.directory("otlp-deliver-output") + "/stdout"
        let child = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", records] + arguments,
                                         environment: environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { $1 },
                                         stdout: output, timeout: 120)
        XCTAssertEqual(child.ending, .exited(0))
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: output))) as? [String: Any])
    }

    /// The request body as opentelemetry-proto decodes it (otlp_logs.py's JSON).
    func decoded(_ request: TestHTTPServer.Request) throws -> [String: Any] {
        let path = try Scratch.directory("otlp-body") + "/body"
        try Data(request.bodyBytes).write(to: URL(fileURLWithPath: path))
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try Oracles.run("otlp_logs.py", [path]).utf8)) as? [String: Any])
    }

    /// The one resource and the one log record of a decoded request, after checking that the
    /// schema knows every field and writes the same bytes back.
    func only(_ decoded: [String: Any], file: StaticString = #filePath, line: UInt = #line) throws -> (resource: [String: Any], scope: [String: Any], record: [String: Any]) {
        XCTAssertEqual(decoded["unknown_fields"] as? [String], [], "fields opentelemetry-proto does not know", file: file, line: line)
        XCTAssertEqual(decoded["canonical"] as? Bool, true, "protobuf serializes what it parsed back to other bytes", file: file, line: line)
        let resources = try XCTUnwrap(decoded["resource_logs"] as? [[String: Any]], file: file, line: line)
        XCTAssertEqual(resources.count, 1, file: file, line: line)
        let scopes = try XCTUnwrap(resources.first?["scopes"] as? [[String: Any]], file: file, line: line)
        XCTAssertEqual(scopes.count, 1, file: file, line: line)
        let records = try XCTUnwrap(scopes.first?["records"] as? [[String: Any]], file: file, line: line)
        XCTAssertEqual(records.count, 1, "one crash, one log record", file: file, line: line)
        return (try XCTUnwrap(resources[0]["resource"] as? [String: Any]), scopes[0], try XCTUnwrap(records.first))
    }

    func recordFiles(_ directory: String) throws -> [String] {
        try RecordFileName.names(in: directory).filter { RecordFileName($0) != nil }
    }

    static func fast() -> UploadPolicy {
        var policy = UploadPolicy()
        policy.initialRetryDelay = .milliseconds(10)
        policy.maxRetryDelay = .seconds(5)
        policy.requestTimeout = .seconds(5)
        return policy
    }

    func sink(_ server: TestHTTPServer, policy: UploadPolicy = fast()) -> OTLPSink {
        OTLPSink(options: OTLPOptions(logsEndpoint: server.origin + "/v1/logs", upload: policy))
    }

    func deadline(_ seconds: Double) -> SuspendingClock.Instant { .now.advanced(by: .seconds(seconds)) }

    func nanoseconds(_ date: Date) -> Double { date.timeIntervalSince1970 * 1e9 }

    // MARK: the record

    /// An async crash of the last run reaches the collector at the next launch as one log record:
    /// FATAL, `app.crash`, at the crash time, with the exception attributes (the stack with its
    /// async callers, named), the thread, the images with build-ids; the resource from the
    /// variables and this machine; sent where the variables say, with their headers, gzip'ed; the
    /// record file deleted once the collector has it.
    func testAnAsyncCrashOfTheLastRunReachesTheCollectorAsOneFatalAppCrashLogRecord() throws {
        let directory = try Scratch.directory("otlp-record")
        let name = try crash("async-task-chain", into: directory)
        let recorded = try CrashRecordReader.read(path: directory + "/" + name)
        let server = try TestHTTPServer()
        let before = Date()
        let summary = try deliver(directory, environment: [
            "OTEL_EXPORTER_OTLP_ENDPOINT": server.origin + "/collector/",
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=abc%20def, x-tenant=generic",
            "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "x-tenant=logs",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
            "OTEL_SERVICE_NAME": "checkout",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=staging,service.name=not-this-one",
        ])
        let after = Date()
        let otlp = try XCTUnwrap(summary["otlp"] as? [String: Any], "no OTLP sink: \(summary)")
        XCTAssertEqual(otlp["sent"] as? [String], [name])
        XCTAssertEqual(try recordFiles(directory), [], "the collector has it, the only sink: deleted")

        let requests = server.allRequests
        XCTAssertEqual(requests.count, 1)
        let request = try XCTUnwrap(requests.first)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.path, "/collector/v1/logs")
        XCTAssertEqual(request.headers["content-type"], "application/x-protobuf")
        XCTAssertEqual(request.headers["content-encoding"], "gzip")
        XCTAssertEqual(request.headers["api-key"], "abc def")
        XCTAssertEqual(request.headers["x-tenant"], "logs", "the logs variable's header wins")
        let body = try decoded(request)
        XCTAssertEqual(body["gzip"] as? Bool, true)
        let (resource, scope, record) = try only(body)

        // The record.
        XCTAssertEqual(record["severity_number_name"] as? String, "SEVERITY_NUMBER_FATAL")
        XCTAssertEqual(record["severity_number"] as? Int, 21)
        XCTAssertEqual(record["severity_text"] as? String, "FATAL")
        XCTAssertEqual(record["event_name"] as? String, "app.crash")
        let crashTime = try XCTUnwrap(recorded.process?.crashWallNanoseconds)
        XCTAssertEqual((record["time_unix_nano"] as? NSNumber)?.int64Value, crashTime, "the crash time")
        XCTAssertEqual(Double(crashTime / 1_000_000), Double(try XCTUnwrap(RecordFileName(name)).milliseconds), accuracy: 1000)
        let observed = try XCTUnwrap((record["observed_time_unix_nano"] as? NSNumber)?.doubleValue)
        XCTAssertGreaterThanOrEqual(observed, nanoseconds(before))
        XCTAssertLessThanOrEqual(observed, nanoseconds(after), "observed when sent")
        XCTAssertEqual(record["trace_id"] as? String, "", "no request in flight: no trace")
        let attributes = try XCTUnwrap(record["attributes"] as? [String: Any])
        let signal = try XCTUnwrap(recorded.signal)
        XCTAssertEqual(attributes["exception.type"] as? String, signal.name)
        XCTAssertEqual(signal.name, swiftTrapSignal == SIGILL ? "SIGILL" : "SIGTRAP")
        let message = try XCTUnwrap(attributes["exception.message"] as? String)
        XCTAssertTrue(message.hasPrefix(signal.codeName), message)
        XCTAssertTrue(message.contains("Unexpectedly found nil while unwrapping an Optional value"), "the Swift fatal message: \(message)")
        XCTAssertEqual(record["body"] as? String, "\(signal.name): \(message.prefix { $0 != "\n" })")
        let crashed = try XCTUnwrap(recorded.crashedThread)
        XCTAssertEqual(attributes["thread.id"] as? Int, Int(crashed.tid))
        if !crashed.name.isEmpty { XCTAssertEqual(attributes["thread.name"] as? String, crashed.name) }
        XCTAssertEqual(attributes["crash.record"] as? String, name)
        XCTAssertEqual(attributes["process.pid"] as? Int, Int(try XCTUnwrap(recorded.process?.pid)))
        // The process's resources at the crash, under the semantic conventions' metric names.
        let resources = try XCTUnwrap(recorded.resources)
        XCTAssertEqual(attributes["process.memory.usage"] as? Int, resources.residentBytes.map { Int($0) })
        XCTAssertEqual(attributes["process.open_file_descriptor.count"] as? Int, resources.openDescriptors)
        XCTAssertEqual(attributes["process.thread.count"] as? Int, resources.threads)
        XCTAssertEqual(attributes["system.cpu.logical.count"] as? Int, resources.cpuCount)
        // The stack: innermost first, the async callers after the physical frames, named.
        let stacktrace = try XCTUnwrap(attributes["exception.stacktrace"] as? String)
        let lines = stacktrace.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "Thread \(crashed.tid)\(crashed.name.isEmpty ? "" : " \"\(crashed.name)\"") crashed:")
        let frames = lines.dropFirst()
        XCTAssertTrue(frames.first?.hasPrefix("#0 0x") == true, stacktrace)
        let asyncLines = frames.filter { $0.hasSuffix(" [async]") }
        XCTAssertGreaterThanOrEqual(asyncLines.count, 4, "the async callers, marked: \(stacktrace)")
        let firstAsync = try XCTUnwrap(frames.firstIndex { $0.hasSuffix(" [async]") })
        XCTAssertFalse(frames[firstAsync...].contains { !$0.hasSuffix(" [async]") && !$0.hasPrefix("…") }, "async callers follow the physical frames")
        XCTAssertTrue(frames.contains { $0.contains("asyncForceUnwrapNil") }, "the crashing function named: \(stacktrace)")
        XCTAssertTrue(asyncLines.contains { $0.contains("handleRequest") }, "an async caller named: \(stacktrace)")
        XCTAssertTrue(frames.contains { $0.contains("(crash-harness+0x") }, "image+offset for each frame: \(stacktrace)")
        // The images a backend symbolicates by.
        let images = try XCTUnwrap(attributes["crash.images"] as? [[String: Any]])
        XCTAssertEqual(images.count, recorded.images.count)
        let harness = try XCTUnwrap(recorded.images.first { $0.isMainExecutable })
        let sent = try XCTUnwrap(images.first { $0["main"] as? Bool == true })
        XCTAssertEqual(sent["build_id"] as? String, harness.buildIDHex)
        XCTAssertFalse(harness.buildIDHex.isEmpty)
        XCTAssertEqual(sent["load_address"] as? String, "0x" + String(harness.base, radix: 16))
        XCTAssertEqual(sent["size"] as? Int, Int(harness.size))

        // The resource and scope.
        XCTAssertEqual(resource["service.name"] as? String, "checkout", "OTEL_SERVICE_NAME before the resource variable's")
        XCTAssertEqual(resource["service.version"] as? String, recorded.appVersion)
        XCTAssertEqual(resource["deployment.environment.name"] as? String, "staging")
        let installation = try String(contentsOfFile: directory + "/installation-id", encoding: .utf8).trimmingCharacters(in: .newlines)
        XCTAssertEqual(resource["service.instance.id"] as? String, installation)
        XCTAssertEqual(resource["host.name"] as? String, HostName.current())
        #if arch(x86_64)
        XCTAssertEqual(resource["host.arch"] as? String, "amd64")
        #else
        XCTAssertEqual(resource["host.arch"] as? String, "arm64")
        #endif
        XCTAssertEqual(resource["os.type"] as? String, "linux")
        XCTAssertEqual(resource["telemetry.sdk.language"] as? String, "swift")
        XCTAssertEqual(resource["container.id"] as? String, HostContext.current().containerID)
        XCTAssertEqual(scope["name"] as? String, "CrashCapture")
        XCTAssertEqual(scope["version"] as? String, CrashCaptureLibrary.version)
    }

    /// The request the crash killed: its trace and span on the log record (sampled), its method,
    /// route, path and id as HTTP's conventions name them; its query and key/values, the
    /// breadcrumbs and the host's details only as the data policy says.
    func testTheCrashedRequestsTraceAndAttributesAndTheDataPolicy() throws {
        let source = try Scratch.directory("otlp-request-source")
        let name = try crash("request-with-query", into: source)
        let recorded = try CrashRecordReader.read(path: source + "/" + name)
        let crashedRequest = try XCTUnwrap(recorded.requests?.crashed)
        for policy in ["default", "request-query,request-attributes,breadcrumbs,host-details,full-paths", "none"] {
            let directory = try Scratch.directory("otlp-request")
            try FileManager.default.copyItem(atPath: source + "/" + name, toPath: directory + "/" + name)
            let server = try TestHTTPServer()
            let summary = try deliver(directory, environment: ["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": server.origin + "/v1/logs"],
                                      policy == "default" ? [] : ["--data", policy])
            XCTAssertEqual((summary["otlp"] as? [String: Any])?["sent"] as? [String], [name], policy)
            let request = try XCTUnwrap(server.allRequests.first)
            XCTAssertEqual(server.allRequests.count, 1)
            XCTAssertNil(request.headers["content-encoding"], "gzip only when asked for")
            let (resource, _, record) = try only(try decoded(request))
            XCTAssertEqual(record["trace_id"] as? String, "4bf92f3577b34da6a3ce929d0000000c", policy)
            XCTAssertEqual(record["trace_id"] as? String, crashedRequest.traceID)
            XCTAssertEqual(record["span_id"] as? String, crashedRequest.spanID)
            XCTAssertEqual((record["span_id"] as? String)?.count, 16)
            XCTAssertEqual(record["flags"] as? Int, 1, "sampled")
            let attributes = try XCTUnwrap(record["attributes"] as? [String: Any])
            XCTAssertEqual(attributes["http.request.method"] as? String, "GET")
            XCTAssertEqual(attributes["http.route"] as? String, "/orders/{id}")
            XCTAssertEqual(attributes["url.path"] as? String, "/orders/12")
            XCTAssertEqual(attributes["crash.request.id"] as? String, "req-12")
            let everything = policy.contains("request-query")
            XCTAssertEqual(attributes["url.query"] as? String, everything ? harnessQuery : nil, policy)
            let keyValues = attributes["crash.request.attributes"] as? [String: Any]
            XCTAssertEqual(keyValues?["index"] as? String, everything ? "12" : nil, policy)
            let token = Array("s3cr3t-query-token".utf8)
            let body = request.bodyBytes
            let holdsToken = (0...(body.count - token.count)).contains { body[$0..<$0 + token.count].elementsEqual(token) }
            XCTAssertEqual(holdsToken, everything, "the query's token in what was sent (\(policy))")
            XCTAssertEqual(attributes["crash.breadcrumbs"] != nil, everything && !recorded.breadcrumbs.isEmpty, policy)
            XCTAssertEqual(resource["host.name"] != nil, policy != "none", "the host's name only with host details (\(policy))")
            XCTAssertEqual(resource["os.version"] != nil, policy != "none", policy)
            XCTAssertEqual(resource["host.arch"] != nil, true, "the architecture always")
            XCTAssertEqual(resource["service.name"] as? String, recorded.appName, "no OTEL_SERVICE_NAME: the app's name")
            // Paths as they are only with full paths; else as the Sentry event and the attached record have them.
            let executable = try XCTUnwrap(recorded.executablePath)
            let sanitized = String(decoding: PathSanitizer.sanitizePath(Array(executable.utf8)), as: UTF8.self)
            XCTAssertNotEqual(sanitized, executable, "the harness's path has something to sanitise")
            XCTAssertEqual(attributes["process.executable.path"] as? String, everything ? executable : sanitized, policy)
            let mainImage = (attributes["crash.images"] as? [[String: Any]])?.first { $0["main"] as? Bool == true }
            XCTAssertEqual(mainImage?["path"] as? String, everything ? executable : sanitized, policy)
        }
    }

    /// The app's scope as it was at the crash (a tag changed just before it): its tags and named
    /// contexts as maps on the log record; its user as `user.*` only where identity may leave.
    func testTheAppScopeAsItWasAtTheCrashGoesWithTheLogRecord() throws {
        for identity in [false, true] {
            let directory = try Scratch.directory("otlp-scope-\(identity)")
            let child = try ChildProcess.run(BuiltProducts.harness,
                                             ["deliver", "--records", directory, "--tag", "tenant=acme", "--tag", "phase=start", "--late-tag", "phase=crash",
                                              "--user", "u-42,ada@example.com", "--context", "database.engine=postgres", "--crash"],
                                             environment: ["SWIFT_BACKTRACE": "enable=no"], timeout: 120)
            XCTAssertEqual(child.ending, .signaled(SIGSEGV))
            let server = try TestHTTPServer()
            _ = try deliver(directory, environment: ["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": server.origin + "/v1/logs"],
                            identity ? ["--data", "identity"] : [])
            let request = try XCTUnwrap(server.allRequests.first)
            let attributes = try XCTUnwrap(try only(try decoded(request)).record["attributes"] as? [String: Any])
            XCTAssertEqual(attributes["crash.tags"] as? [String: String], ["tenant": "acme", "phase": "crash"])
            XCTAssertEqual(attributes["crash.contexts"] as? [String: [String: String]], ["database": ["engine": "postgres"]])
            XCTAssertEqual(attributes["user.id"] as? String, identity ? "u-42" : nil)
            XCTAssertEqual(attributes["user.email"] as? String, identity ? "ada@example.com" : nil)
            XCTAssertEqual(request.body.contains("ada@example.com"), identity, "the user leaves only with identity")
        }
    }

    /// A record the reader rejects (every record is untrusted) still tells the collector that a
    /// crash happened: one FATAL `app.crash` log record at the crash time its file name holds,
    /// saying it is unreadable and why, with none of its bytes; then the file is deleted.
    func testAnUnreadableRecordReachesTheCollectorAsALogRecordSayingSo() throws {
        let directory = try Scratch.directory("otlp-unreadable")
        let name = "crash-1700000000000-999999-999999.ccrec"
        try Data("not a record at all".utf8).write(to: URL(fileURLWithPath: directory + "/" + name))
        let server = try TestHTTPServer()
        let summary = try deliver(directory, environment: ["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": server.origin + "/v1/logs"])
        XCTAssertEqual((summary["otlp"] as? [String: Any])?["sent"] as? [String], [name], "\(summary)")
        let request = try XCTUnwrap(server.allRequests.first)
        XCTAssertFalse(request.body.contains("not a record at all"), "none of the file's bytes leave")
        let record = try only(try decoded(request)).record
        XCTAssertEqual(record["severity_number"] as? Int, 21)
        XCTAssertEqual(record["event_name"] as? String, "app.crash")
        XCTAssertEqual((record["time_unix_nano"] as? NSNumber)?.int64Value, 1_700_000_000_000 * 1_000_000, "the crash time its name holds")
        let attributes = try XCTUnwrap(record["attributes"] as? [String: Any])
        XCTAssertEqual(attributes["exception.type"] as? String, "unreadable crash record")
        XCTAssertTrue((attributes["exception.message"] as? String)?.contains("not a crash record") == true, "\(attributes)")
        XCTAssertEqual(attributes["crash.record"] as? String, name)
        XCTAssertEqual(attributes["crash.complete"] as? Bool, false)
        XCTAssertEqual(try recordFiles(directory), [], "the collector has it, the only sink: deleted")
    }

    /// With Sentry configured too, both get the record in the same launch (the sinks of one
    /// process share its lease), and only then is the file deleted.
    func testWithSentryConfiguredTooBothGetTheRecordInOneLaunch() throws {
        let directory = try Scratch.directory("otlp-and-sentry")
        let name = try crash("null-dereference", into: directory)
        let collector = try TestHTTPServer()
        let sentry = try TestHTTPServer()
        let summary = try deliver(directory, environment: ["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": collector.origin + "/v1/logs"],
                                  ["--sentry-dsn", "http://publickey@127.0.0.1:\(sentry.port)/42"])
        XCTAssertEqual((summary["otlp"] as? [String: Any])?["sent"] as? [String], [name])
        XCTAssertEqual(summary["sentToSentry"] as? Bool, true)
        XCTAssertEqual(sentry.allRequests.count, 1)
        XCTAssertEqual(collector.allRequests.count, 1)
        XCTAssertEqual(try recordFiles(directory), [])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".ack") }, [])
    }

    // MARK: behaviour

    /// A 500 and a 429 with Retry-After are retried on the senders' shared backoff, the retry
    /// after the 429 no sooner than it asked; the record goes once acknowledged, and only then
    /// is it deleted.
    func testServerErrorsAndRateLimitsAreRetriedAndTheRecordDeletedOnceTheCollectorHasIt() throws {
        let directory = try Scratch.directory("otlp-retry")
        let name = try crash("null-dereference", into: directory)
        let times = TimeLog()
        let server = try TestHTTPServer { request in
            times.mark()
            switch request.index {
            case 0: return .status(500)
            case 1: return .status(429, headers: ["Retry-After": "1"])
            default: return .status(200, headers: ["Content-Type": "application/x-protobuf"], body: [])
            }
        }
        let otlp = sink(server)
        let launch = CrashReporting.deliverRecords(in: directory, sinks: [otlp])
        XCTAssertEqual(launch.recordsAwaitingSinks, [name], "taken, not yet acknowledged")
        XCTAssertTrue(otlp.shutdown(deadline: deadline(30)))
        let marks = times.marks
        XCTAssertEqual(marks.count, 3)
        XCTAssertGreaterThanOrEqual(marks[2] - marks[1], 0.95, "the retry came before Retry-After's second")
        for request in server.allRequests {
            let (_, _, record) = try only(try decoded(request))
            XCTAssertEqual((record["attributes"] as? [String: Any])?["crash.record"] as? String, name)
        }
        XCTAssertEqual(otlp.currentReport.sent, [name])
        XCTAssertNil(otlp.currentReport.lastError)
        XCTAssertEqual(try recordFiles(directory), [])
    }

    /// A 2xx whose ExportLogsServiceResponse says the record was rejected: logged (the report),
    /// not sent again, acknowledged.
    func testAPartialSuccessIsReportedAndNotRetried() throws {
        let directory = try Scratch.directory("otlp-partial")
        let name = try crash("null-dereference", into: directory)
        let hex = try Oracles.run("otlp_logs.py", ["--response", "1", "timestamp too old"]).trimmingCharacters(in: .whitespacesAndNewlines)
        let response = stride(from: 0, to: hex.count, by: 2).map { offset -> UInt8 in
            let start = hex.index(hex.startIndex, offsetBy: offset)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
        }
        let server = try TestHTTPServer { _ in .status(200, headers: ["Content-Type": "application/x-protobuf"], body: response) }
        let otlp = sink(server)
        _ = CrashReporting.deliverRecords(in: directory, sinks: [otlp])
        XCTAssertTrue(otlp.shutdown(deadline: deadline(30)))
        XCTAssertEqual(server.allRequests.count, 1, "not retried")
        let why = try XCTUnwrap(otlp.currentReport.rejected[name])
        XCTAssertTrue(why.contains("rejected 1 log record"), why)
        XCTAssertTrue(why.contains("timestamp too old"), why)
        XCTAssertEqual(otlp.currentReport.sent, [])
        XCTAssertEqual(try recordFiles(directory), [], "acknowledged: sending it again would be rejected again")
    }

    /// A 4xx (a wrong path, a missing key) is not retried this launch and loses nothing: the record
    /// stays, unacknowledged, with the collector's words as the last error; the next launch, with
    /// a collector that takes it, sends it.
    func testA4xxKeepsTheRecordWithTheCollectorsWordsAsTheLastError() throws {
        let directory = try Scratch.directory("otlp-4xx")
        let name = try crash("null-dereference", into: directory)
        let refusing = try TestHTTPServer { _ in .status(401, headers: ["Content-Type": "text/plain"], body: Array("missing api key".utf8)) }
        let first = sink(refusing)
        _ = CrashReporting.deliverRecords(in: directory, sinks: [first])
        XCTAssertTrue(first.shutdown(deadline: deadline(30)))
        XCTAssertEqual(refusing.allRequests.count, 1, "not retried")
        let lastError = try XCTUnwrap(first.currentReport.lastError)
        XCTAssertTrue(lastError.contains("HTTP 401"), lastError)
        XCTAssertTrue(lastError.contains("missing api key"), lastError)
        XCTAssertEqual(first.currentReport.kept[name], lastError)
        XCTAssertEqual(try recordFiles(directory), [name], "kept")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/" + name + ".otlp.ack"))

        let taking = try TestHTTPServer()
        let second = sink(taking)
        _ = CrashReporting.deliverRecords(in: directory, sinks: [second])
        XCTAssertTrue(second.shutdown(deadline: deadline(30)))
        XCTAssertEqual(second.currentReport.sent, [name])
        XCTAssertEqual(try recordFiles(directory), [])
    }

    /// A collector that is down for two launches: both keep every record; the third launch sends
    /// each once; a fourth sends nothing.
    func testACollectorDownUntilTheThirdLaunchLosesNothingAndGetsEachRecordOnce() throws {
        let directory = try Scratch.directory("otlp-down")
        let names = [try crash("null-dereference", into: directory), try crash("abort", into: directory)].sorted()
        let down = "http://127.0.0.1:\(try TestHTTPServer.unusedPort())/v1/logs"
        for launch in 1...2 {
            let summary = try deliver(directory, environment: ["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": down], ["--timeout", "1"])
            XCTAssertEqual((summary["recordsAwaitingSinks"] as? [String])?.sorted(), names, "launch \(launch)")
            XCTAssertEqual(summary["sinksFinished"] as? Bool, false, "launch \(launch)")
            XCTAssertNotNil((summary["otlp"] as? [String: Any])?["lastError"] as? String, "launch \(launch): the connection's error")
            XCTAssertEqual(try recordFiles(directory), names, "launch \(launch)")
        }
        let server = try TestHTTPServer()
        let third = try deliver(directory, environment: ["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": server.origin + "/v1/logs"])
        XCTAssertEqual(((third["otlp"] as? [String: Any])?["sent"] as? [String])?.sorted(), names)
        let sent = try server.allRequests.map { request -> String in
            let (_, _, record) = try only(try decoded(request))
            return try XCTUnwrap((record["attributes"] as? [String: Any])?["crash.record"] as? String)
        }
        XCTAssertEqual(sent.sorted(), names, "each once")
        XCTAssertEqual(try recordFiles(directory), [])
        _ = try deliver(directory, environment: ["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": server.origin + "/v1/logs"])
        XCTAssertEqual(server.allRequests.count, 2, "nothing sent twice")
    }

    /// Crash-time upload with an OTLP endpoint and no DSN: the crashing process's handler starts
    /// crash-uploader, which sends the record to the collector with the app's settings (its
    /// service name) while the process dies; the record is deleted (the collector was its only
    /// sink) and the next launch sends nothing more. The app's data policy goes with it: host
    /// details off, the resource names no host.
    func testAtCrashTimeTheUploaderSendsTheRecordToTheCollectorAndTheNextLaunchNothingMore() throws {
        let directory = try Scratch.directory("otlp-crash-time")
        let server = try TestHTTPServer()
        let environment = ["SWIFT_BACKTRACE": "enable=no", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": server.origin + "/v1/logs",
                           "OTEL_SERVICE_NAME": "at-crash-time"]
        let output = try Scratch.directory("otlp-crash-time-output")
        let child = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", directory, "--crash", "--data", "none",
                                                                 "--crash-time-uploader", CrashTimeUpload.executableName],
                                         environment: environment, stdout: output + "/stdout", stderr: output + "/stderr",
                                         timeout: 90, ownProcessGroup: true, leftoverGrace: 40)
        XCTAssertEqual(child.ending, .signaled(SIGSEGV))
        let launch = try XCTUnwrap(try String(contentsOfFile: output + "/stdout", encoding: .utf8).split(separator: "\n").first)
        XCTAssertEqual((try JSONSerialization.jsonObject(with: Data(launch.utf8)) as? [String: Any])?["errors"] as? [String], [],
                       "crash-time upload on with an OTLP endpoint alone")
        let until = Date(timeIntervalSinceNow: 60)
        while server.allRequests.isEmpty && Date() < until { usleep(10_000) }
        XCTAssertEqual(server.allRequests.count, 1, "the crash-time upload")
        let (resource, _, record) = try only(try decoded(try XCTUnwrap(server.allRequests.first)))
        XCTAssertEqual(resource["service.name"] as? String, "at-crash-time")
        XCTAssertNil(resource["host.name"], "host details off in the app's data policy: none at crash time either")
        XCTAssertNotNil(resource["os.type"])
        XCTAssertEqual(record["event_name"] as? String, "app.crash")
        XCTAssertEqual((record["attributes"] as? [String: Any])?["exception.type"] as? String, "SIGSEGV")
        XCTAssertEqual(try recordFiles(directory), [], "the collector was the only sink: deleted")
        _ = try deliver(directory, environment: ["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": server.origin + "/v1/logs"])
        XCTAssertEqual(server.allRequests.count, 1, "the next launch sends nothing more")
    }

    // MARK: configuration

    /// The variables as OpenTelemetry's SDKs read them for logs over OTLP/HTTP.
    func testTheEnvironmentVariablesAreReadAsOpenTelemetrysSDKsReadThem() {
        func settings(_ variables: [String: String]) -> OTLPEnvironment { OTLPEnvironment { variables[$0] } }
        XCTAssertNil(settings([:]).logsEndpoint, "off without an endpoint")
        XCTAssertEqual(settings(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]).logsEndpoint, "http://collector:4318/v1/logs")
        XCTAssertEqual(settings(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/base/"]).logsEndpoint, "http://collector:4318/base/v1/logs")
        XCTAssertEqual(settings(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://b:9/custom"]).logsEndpoint,
                       "http://b:9/custom", "the logs endpoint as it is")
        XCTAssertNil(settings(["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://b:9/custom", "OTEL_LOGS_EXPORTER": "none"]).logsEndpoint)
        XCTAssertNil(settings(["OTEL_EXPORTER_OTLP_ENDPOINT": ""]).logsEndpoint, "empty is unset")
        let headers = settings(["OTEL_EXPORTER_OTLP_HEADERS": "a=1, b = two%2Cthree ,bad,=x", "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "b=logs"]).headers
        XCTAssertEqual(headers, ["a": "1", "b": "logs"])
        XCTAssertEqual(settings(["OTEL_EXPORTER_OTLP_HEADERS": "b = two%2Cthree=4"]).headers, ["b": "two,three=4"])
        XCTAssertEqual(settings([:]).timeoutMilliseconds, 10_000)
        XCTAssertEqual(settings(["OTEL_EXPORTER_OTLP_TIMEOUT": "2500"]).timeoutMilliseconds, 2500)
        XCTAssertEqual(settings(["OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT": "700"]).timeoutMilliseconds, 700)
        XCTAssertEqual(settings(["OTEL_EXPORTER_OTLP_TIMEOUT": "soon"]).timeoutMilliseconds, 10_000)
        XCTAssertTrue(settings(["OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"]).gzip)
        XCTAssertFalse(settings(["OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_LOGS_COMPRESSION": "none"]).gzip)
        XCTAssertEqual(settings(["OTEL_SERVICE_NAME": "checkout"]).serviceName, "checkout")
        XCTAssertEqual(settings(["OTEL_RESOURCE_ATTRIBUTES": "k8s.cluster.name=eu%201,team=payments"]).resourceAttributes,
                       ["k8s.cluster.name": "eu 1", "team": "payments"])
    }

    /// The configuration's fields start from the variables; one line turns the sink on.
    func testTheConfigurationStartsFromTheVariablesAndOneLineEnablesIt() throws {
        var configuration = CrashReporting.Configuration(recordDirectory: try Scratch.directory("otlp-configuration"), appName: "a", appVersion: "1")
        // (The test process has no OTEL_* variables: nothing is on.)
        XCTAssertNil(configuration.otlp)
        configuration.otlp = OTLPOptions(logsEndpoint: "http://127.0.0.1:9/v1/logs")
        XCTAssertEqual(configuration.otlp?.upload.requestTimeout, .seconds(10))
        configuration.captureCrashes = false
        let reporting = CrashReporting.start(configuration)
        XCTAssertEqual(reporting.sinks.map(\.id.rawValue), ["otlp"])
        reporting.shutdown(timeout: .seconds(1))
    }

    /// An uncaught C++ exception in the log record: `exception.type` the C++ type, `exception.message`
    /// its what(), as an OpenTelemetry C++ SDK records an exception.
    func testAnUncaughtCxxExceptionIsTheLogRecordsExceptionTypeAndMessage() throws {
        let directory = try Scratch.directory("otlp-cxx")
        let name = try crash("cxx-exception", into: directory)
        let record = try CrashRecordReader.read(path: directory + "/" + name)
        let log = CrashLogRecord.logRecord(record: record, fileName: name, observedNanoseconds: 1)
        let attributes = Dictionary(log.attributes.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(attributes["exception.type"], .string("std::runtime_error"))
        XCTAssertEqual(attributes["exception.message"], .string("the order could not be priced: currency XTS"))
        XCTAssertEqual(attributes["signal.number"], .int(Int64(SIGABRT)))
    }

    /// A memory error the guarded heap caught: `exception.type` AddressSanitizer's name, and
    /// `crash.guarded_heap.*` the allocation, the offset and both stacks named.
    func testAGuardedHeapErrorIsNamedWithBothStacks() throws {
        let directory = try Scratch.directory("otlp-guarded-heap")
        var environment = ProcessInfo.processInfo.environment
        environment["CRASHCAPTURE_GUARDED_HEAP"] = "1:4096"
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment["CRASHCAPTURE_DISABLE"] = nil
        let child = try ChildProcess.run(BuiltProducts.directory + "/guarded-heap-crasher", [directory, "c", "use-after-free-read"],
                                         environment: environment, timeout: 60)
        XCTAssertEqual(child.ending, .signaled(SIGSEGV))
        let name = try XCTUnwrap(try RecordFileName.names(in: directory).first)
        let record = try CrashRecordReader.read(path: directory + "/" + name)
        let log = CrashLogRecord.logRecord(record: record, fileName: name, observedNanoseconds: 1)
        let attributes = Dictionary(log.attributes.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(attributes["exception.type"], .string("heap-use-after-free"))
        XCTAssertEqual(attributes["crash.guarded_heap.allocation_size"], .int(48))
        XCTAssertEqual(attributes["crash.guarded_heap.offset"], .int(24))
        guard case .array(let allocated)? = attributes["crash.guarded_heap.allocation_stack"],
              case .array(let freed)? = attributes["crash.guarded_heap.free_stack"] else {
            return XCTFail("no stacks: \(attributes.keys.sorted())")
        }
        XCTAssertEqual(allocated.first, .string("gh_allocate_in_c"))
        XCTAssertEqual(freed.first, .string("gh_free_in_c"))
    }
}
