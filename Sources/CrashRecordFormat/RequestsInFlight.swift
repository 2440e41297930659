// RequestsInFlight.swift — the requests a crash record says were in flight, and the one the crashed thread was serving.
import CCrashRecordLayout

/// What a record says about the requests in flight at the crash (`CC_SEC_REQUESTS`,
/// `CC_SEC_REQUEST`): the one the crashed thread was serving, if it could be told, and the
/// others, lost with the process. `nil` on a record of a program that attaches no
/// `CrashContext`.
package struct RequestsInFlight: Sendable, Equatable {
    /// How the crashed thread's request was told.
    package enum Status: Sendable, Equatable {
        /// The crashed thread was running a Swift task (its address).
        case task(UInt64)
        /// The crashed thread was running no Swift task.
        case noTask
        /// Where the runtime keeps the current task or its task-locals was not known in that
        /// process: no task's request is named (the record's notes say why).
        case unknown
        /// A value this reader does not know.
        case other(UInt32)
    }

    package var status: Status
    /// The request the crashed thread was serving; `nil` when none can be named.
    package var crashed: CrashRequest?
    /// The other requests in flight, most recent first (at most 32 are recorded).
    package var others: [CrashRequest]
    /// How many were in flight at the crash, the crashed one included (more than
    /// `others.count + 1` when some were not recorded).
    package var inFlight: Int
    /// Requests whose context could not be attached since start: the table was full.
    package var dropped: Int

    package init(status: Status, crashed: CrashRequest? = nil, others: [CrashRequest] = [], inFlight: Int = 0, dropped: Int = 0) {
        self.status = status
        self.crashed = crashed
        self.others = others
        self.inFlight = inFlight
        self.dropped = dropped
    }
}

/// One request in flight at the crash, as its `CrashContext` described it.
package struct CrashRequest: Sendable, Equatable {
    package var requestID: String
    package var method: String
    /// The route's template (`/orders/{id}`); empty when not known.
    package var route: String
    /// The path requested, without the query.
    package var path: String
    /// The query string, when the program recorded it (off by default).
    package var query: String
    /// W3C trace-context ids as lowercase hex; `nil` when the request carried no trace.
    package var traceID: String?
    package var spanID: String?
    package var parentSpanID: String?
    package var sampled: Bool
    /// The program's own key/values, in the order written (sorted by key).
    package var attributes: [(key: String, value: String)]
    /// Attached to a thread rather than a task.
    package var isThreadContext: Bool
    /// The task (or, for a thread context, the thread id) it was attached in: an address of
    /// the crashed process, for the reader's own checks.
    package var key: UInt64
    /// When it was attached (CLOCK_REALTIME, ns since the epoch).
    package var startWallNanoseconds: Int64
    /// When it was attached on the monotonic clock (its age: ``CrashRecord/age(of:)``).
    package var startMonotonicNanoseconds: Int64
    /// In a record of a live process: where its task waits (nil for a thread's context, or in a crash record).
    package var waiting: SuspendedTask?

    /// What it is served as, in one line: `GET /orders/{id}` (the route, else the path).
    package var label: String {
        [method, target].filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// The route's template, else the path: what a request is grouped and named by.
    package var target: String { route.isEmpty ? path : route }

    /// Its age at the crash, in seconds, given the crash's monotonic time.
    package func age(atMonotonicNanoseconds crash: Int64) -> Double {
        Double(max(0, crash &- startMonotonicNanoseconds)) / 1e9
    }

    package init(requestID: String = "", method: String = "", route: String = "", path: String = "", query: String = "",
                 traceID: String? = nil, spanID: String? = nil, parentSpanID: String? = nil, sampled: Bool = false,
                 attributes: [(key: String, value: String)] = [], isThreadContext: Bool = false, key: UInt64 = 0,
                 startWallNanoseconds: Int64 = 0, startMonotonicNanoseconds: Int64 = 0) {
        self.requestID = requestID
        self.method = method
        self.route = route
        self.path = path
        self.query = query
        self.traceID = traceID
        self.spanID = spanID
        self.parentSpanID = parentSpanID
        self.sampled = sampled
        self.attributes = attributes
        self.isThreadContext = isThreadContext
        self.key = key
        self.startWallNanoseconds = startWallNanoseconds
        self.startMonotonicNanoseconds = startMonotonicNanoseconds
    }

    package static func == (a: CrashRequest, b: CrashRequest) -> Bool {
        a.requestID == b.requestID && a.method == b.method && a.route == b.route && a.path == b.path && a.query == b.query
            && a.traceID == b.traceID && a.spanID == b.spanID && a.parentSpanID == b.parentSpanID && a.sampled == b.sampled
            && a.attributes.elementsEqual(b.attributes, by: { $0.key == $1.key && $0.value == $1.value })
            && a.isThreadContext == b.isThreadContext && a.key == b.key && a.startWallNanoseconds == b.startWallNanoseconds
            && a.startMonotonicNanoseconds == b.startMonotonicNanoseconds && a.waiting == b.waiting
    }
}

extension RequestsInFlight.Status {
    /// `task`, `noTask`, `unknown`, `other N`: the status as `crash-inspect` and the tests say it.
    package var name: String {
        switch self {
        case .task: return "task"
        case .noTask: return "noTask"
        case .unknown: return "unknown"
        case .other(let raw): return "other \(raw)"
        }
    }

    init(raw: UInt32, currentTask: UInt64) {
        switch raw {
        case CC_REQUESTS_TASK.rawValue: self = .task(currentTask)
        case CC_REQUESTS_NO_TASK.rawValue: self = .noTask
        case CC_REQUESTS_UNKNOWN.rawValue: self = .unknown
        default: self = .other(raw)
        }
    }
}

extension CrashRecord {
    /// How long `request` had been in flight when the process crashed, in seconds (both times
    /// on the crashed machine's monotonic clock); nil when the record has no process section.
    package func age(of request: CrashRequest) -> Double? {
        process.map { request.age(atMonotonicNanoseconds: $0.crashMonotonicNanoseconds) }
    }
}
