// RequestScenarios.swift — crashes of a server's requests: the record and the stderr line must name the request the crashed task was serving, and never another.
import CCrashScenarios
package import CrashCapture
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The calling thread's id.
package func gettid() -> Int32 { cch_gettid() }

/// The context of the harness's request number `index`: its own id, route and W3C trace (the
/// trace id ends in the index, so a mix-up of two requests shows), and the thread it started on.
package func harnessRequestContext(_ index: Int) -> CrashContext {
    var context = CrashContext(requestID: "req-\(index)", method: index % 2 == 0 ? "GET" : "POST", route: "/orders/{id}",
                               path: "/orders/\(index)", attributes: ["attached_tid": "\(gettid())", "index": "\(index)"])
    context.continueTrace(traceparent: harnessTraceparent(index))
    return context
}

/// `00-<trace id>-<parent id>-01` for request `index`.
package func harnessTraceparent(_ index: Int) -> String {
    let hex = String(index, radix: 16)
    let tail = String(repeating: "0", count: max(0, 8 - hex.count)) + hex
    return "00-4bf92f3577b34da6a3ce929d\(tail)-00f067aa0ba9\(tail.suffix(4))-01"
}

/// A request in flight: suspends and resumes (so it moves between the pool's threads) until told
/// to stop, for at most ten seconds.
@inline(never) func servingLevel(_ index: Int, until done: UpdateCounter) async {
    await CrashContext.withValue(harnessRequestContext(index)) {
        for _ in 0..<10_000 where done.value == 0 {
            try? await Task.sleep(nanoseconds: 1_000_000)
        }
    }
}

/// The query string request-with-query's crashing request records: a token, which must leave
/// the machine only where the data policy allows it.
package let harnessQuery = "token=s3cr3t-query-token&page=2"

/// The crashing request: awaits until it runs on another thread than the one it started on
/// (bounded), then crashes there, awaiting nothing more. `query`: the query string it records.
@inline(never) func crashingRequestLevel(_ index: Int, query: String = "") async {
    let started = gettid()
    var context = harnessRequestContext(index)
    context.query = query
    await CrashContext.withValue(context) {
        for _ in 0..<2_000 where gettid() == started {
            try? await Task.sleep(nanoseconds: 1_000_000)
        }
        asyncForceUnwrapNil()
    }
}

extension Scenarios {
    /// The checks every request scenario makes of its record and its stderr line: the crashed
    /// request is `crashed` (nil: none may be named), `others` more were recorded in flight, and
    /// `extra` whatever the scenario adds.
    static func requestCheck(crashed: Int?, status: String, others: Int, inFlight: Int,
                             extra: @escaping @Sendable (CrashRecord, [String]) -> [String] = { _, _ in [] }) -> @Sendable (RunOutcome) -> [String] {
        { outcome in
            guard let path = outcome.ownRecordFiles.first, let record = try? CrashRecordReader.read(path: path) else {
                return ["no readable record"]
            }
            var failures: [String] = []
            guard let requests = record.requests else { return ["the record has no requests section"] }
            let statusText: String
            switch requests.status {
            case .task: statusText = "task"
            case .noTask: statusText = "no task"
            case .unknown: statusText = "unknown"
            case .other(let raw): statusText = "other \(raw)"
            }
            if statusText != status { failures.append("status \(statusText), expected \(status)") }
            if requests.inFlight != inFlight { failures.append("\(requests.inFlight) requests in flight, expected \(inFlight)") }
            if requests.others.count != others { failures.append("\(requests.others.count) other requests recorded, expected \(others)") }
            // Every request recorded is whole: its trace and path are its own id's.
            for request in [requests.crashed].compactMap({ $0 }) + requests.others {
                guard let index = Int(request.requestID.dropFirst(4)) else { failures.append("request id \(request.requestID)"); continue }
                let expected = harnessRequestContext(index)
                if request.traceID != expected.traceID || request.path != expected.path || request.method != expected.method
                    || request.parentSpanID != expected.parentSpanID || !request.sampled || request.route != "/orders/{id}" {
                    failures.append("request \(request.requestID) is not what was attached: \(request)")
                }
            }
            if requests.others.contains(where: { $0.requestID == requests.crashed?.requestID }) {
                failures.append("the crashed request is also listed among the others")
            }
            let lines = (try? CrashLine.all(in: outcome.stderr)) ?? []
            let line = lines.first
            if let crashed {
                if requests.crashed?.requestID != "req-\(crashed)" {
                    failures.append("the crashed request is \(requests.crashed?.requestID ?? "none"), expected req-\(crashed)")
                }
                let expected = harnessRequestContext(crashed)
                if line?.requestID != "req-\(crashed)" || line?.traceID != expected.traceID || line?.spanID != requests.crashed?.spanID {
                    failures.append("the stderr line names \(line.map { "\($0.requestID ?? "no request"), trace \($0.traceID ?? "none")" } ?? "nothing")")
                }
            } else {
                if let named = requests.crashed { failures.append("a request is named crashed: \(named.requestID)") }
                if line == nil || line?.requestID != nil || line?.traceID != nil { failures.append("the stderr line names a request: \(lines)") }
            }
            return failures + extra(record, record.notes)
        }
    }

    static func requestScenario(_ name: String, _ summary: String, frames: [String] = ["asyncForceUnwrapNil"],
                                configure: (@Sendable (inout CrashHandler.Configuration) -> Void)? = nil,
                                check: @escaping @Sendable (RunOutcome) -> [String], _ perform: @escaping @Sendable (ScenarioContext) -> Void) -> Scenario {
        Scenario(name, summary, ending: .signal(swiftTrapSignal),
                 record: .init(signal: swiftTrapSignal, frames: frames, message: "Unexpectedly found nil while unwrapping an Optional value",
                               messageOnlyInDebug: true, crashedOffMainThread: true),
                 output: swiftRuntimeOutput, configure: configure, check: check, perform: perform)
    }

    /// Starts requests 0..<count in flight (`servingLevel`), but `except`, and returns once every
    /// one is attached.
    static func requestsInFlight(_ count: Int, except: Int? = nil, done: UpdateCounter) {
        for index in 0..<count where index != except { Task { await servingLevel(index, until: done) } }
        // Each attaches at once: a short wait for the pool to start them all.
        usleep(300_000)
    }

    static let requestScenarios: [Scenario] = [
        requestScenario("request-among-fifty", "with 50 requests in flight, each with its own trace, a crash after an await that moved the task to another thread names exactly the crashing request and trace, in the record and on stderr, and lists 32 of the others",
                        frames: ["asyncForceUnwrapNil", "crashingRequestLevel"],
                        check: requestCheck(crashed: 37, status: "task", others: 32, inFlight: 50) { record, _ in
                            // The await moved the task: it crashed on another thread than it started on.
                            guard let attached = record.requests?.crashed?.attributes.first(where: { $0.key == "attached_tid" }) else {
                                return ["the crashed request has no attached_tid attribute"]
                            }
                            return attached.value == "\(record.process?.tid ?? 0)" ? ["the crashing task never moved to another thread (tid \(attached.value))"] : []
                        }) { _ in
            let done = UpdateCounter()
            requestsInFlight(50, except: 37, done: done)
            // Request 37 is the one that crashes; the 49 others stay in flight.
            Task { await crashingRequestLevel(37) }
            while true { sleep(60) }
        },
        requestScenario("request-with-query", "as request-among-fifty with 5 requests in flight, the crashing one (req-12) recording its query string (a token): in the record as written, for the data policy to keep or blank",
                        frames: ["asyncForceUnwrapNil", "crashingRequestLevel"],
                        check: requestCheck(crashed: 12, status: "task", others: 4, inFlight: 5) { record, _ in
                            record.requests?.crashed?.query == harnessQuery ? [] : ["the crashed request's query is \(record.requests?.crashed?.query ?? "-")"]
                        }) { _ in
            let done = UpdateCounter()
            requestsInFlight(4, done: done)
            Task { await crashingRequestLevel(12, query: harnessQuery) }
            while true { sleep(60) }
        },
        requestScenario("request-child-task", "a crash in a task group's child names the request its parent task serves",
                        check: requestCheck(crashed: 7, status: "task", others: 3, inFlight: 4)) { _ in
            let done = UpdateCounter()
            requestsInFlight(3, done: done)
            Task {
                await CrashContext.withValue(harnessRequestContext(7)) {
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask { await handleRequest(asyncForceUnwrapNil) }
                        await group.waitForAll()
                    }
                }
            }
            while true { sleep(60) }
        },
        requestScenario("request-unstructured-task", "a crash in an unstructured Task created inside a request (as Vapor runs a route handler) names that request: the Task inherits its task-locals",
                        check: requestCheck(crashed: 8, status: "task", others: 3, inFlight: 4)) { _ in
            let done = UpdateCounter()
            requestsInFlight(3, done: done)
            Task {
                await CrashContext.withValue(harnessRequestContext(8)) {
                    await Task { await handleRequest(asyncForceUnwrapNil) }.value
                }
            }
            while true { sleep(60) }
        },
        requestScenario("request-detached-task", "a crash in a detached task (which inherits nothing) while requests are in flight names none of them: a wrong request is worse than none",
                        check: requestCheck(crashed: nil, status: "task", others: 5, inFlight: 5)) { _ in
            let done = UpdateCounter()
            requestsInFlight(5, done: done)
            Task.detached { await handleRequest(asyncForceUnwrapNil) }
            while true { sleep(60) }
        },
        requestScenario("request-thread-context", "a crash on a thread that runs no task names the context that thread attached for itself",
                        frames: ["asyncForceUnwrapNil"] + levelChain,
                        check: requestCheck(crashed: 9, status: "no task", others: 2, inFlight: 3) { record, _ in
                            record.requests?.crashed?.isThreadContext == true ? [] : ["the crashed request is not the thread's own context"]
                        }) { _ in
            let done = UpdateCounter()
            requestsInFlight(2, done: done)
            onSecondaryThread {
                CrashContext.withThreadValue(harnessRequestContext(9)) { asyncForceUnwrapNil() }
            }
        },
        requestScenario("request-unknown-layout", "where the runtime's task layout is not known, no request is named crashed, a note says why, and the requests in flight are still listed",
                        configure: { $0._testUnknownTaskLayout = true },
                        check: requestCheck(crashed: nil, status: "unknown", others: 4, inFlight: 4) { _, notes in
                            notes.contains { $0.contains("the crashed task's request could not be told") } ? [] : ["no note says why: \(notes)"]
                        }) { _ in
            let done = UpdateCounter()
            requestsInFlight(3, done: done)
            Task { await CrashContext.withValue(harnessRequestContext(3)) { await handleRequest(asyncForceUnwrapNil) } }
            while true { sleep(60) }
        },
    ]
}
