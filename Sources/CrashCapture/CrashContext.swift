// CrashContext.swift — the request a task is serving, as the next crash record names it.
//
// The C core keeps a lock-free table of the requests in flight and, at a crash, reads which one
// the crashed thread was serving from the Swift runtime itself (CShims/cc_swift_abi.h says how and
// what it checks). This file fills a table entry from Swift values and binds its handle to a
// TaskLocal for the request's duration, so that a child task or an unstructured `Task` created
// inside the request is found to serve it too.
import CShims
import Synchronization

/// The request (or other unit of work) a task is serving, as a crash record names it: the
/// record, `crash-inspect`, the Sentry event and the `crashcapture:` line on stderr then say
/// which request and trace the crash killed, and list the others that were in flight.
///
/// A server framework's middleware attaches one per request (the CrashCaptureHummingbird and
/// CrashCaptureVapor integrations do); any other code can:
///
/// ```swift
/// var context = CrashContext(requestID: id, method: "GET", path: "/orders/42")
/// context.continueTrace(traceparent: headers["traceparent"] ?? "")
/// try await CrashContext.withValue(context) { try await handle(request) }
/// ```
///
/// Its fields are set through the initializer (and ``continueTrace(traceparent:)``): what the
/// record keeps of them is read back with `crash-inspect show` (`--json`: `requests`).
///
/// Each text is cut (at a character boundary) to its field in the record: `requestID` 63
/// bytes, `method` 15, `route` 127, `path` 255, `query` 255, `attributes` 255 in all. Setting
/// and clearing one costs about a microsecond (≈ 2 µs with a `traceparent` header parsed first)
/// and allocates nothing that lives on; at most
/// 256 can be attached at once (more are served as usual, only not named in a record).
public struct CrashContext: Sendable, Equatable {
    /// The request's id: the framework's own, or a header's (`X-Request-Id`).
    package var requestID: String
    /// The HTTP method, `"GET"`; or another verb for other work (`"grpc"`, `"job"`).
    package var method: String
    /// The route's template, `"/orders/{id}"`: what groups requests of one kind. Empty if unknown.
    package var route: String
    /// The path as requested, without the query string.
    package var path: String
    /// The query string (without `?`). Leave it empty unless you need it: it often carries
    /// tokens. Even when set it leaves the machine only where `CrashDataPolicy` allows.
    package var query: String
    /// The W3C trace id: 32 lowercase hex digits, or empty.
    package var traceID: String
    /// This request's span id: 16 lowercase hex digits, or empty.
    package var spanID: String
    /// The span that called it (the `traceparent` header's parent id): 16 hex digits, or empty.
    package var parentSpanID: String
    /// The trace flags' sampled bit.
    package var sampled: Bool
    /// A few key/values of your own (a tenant, a job id), written sorted by key as `key=value`
    /// entries within 255 bytes: what does not fit is left out.
    package var attributes: [String: String]

    /// A context for one request (or other unit of work); every field is optional. Texts longer
    /// than their field are cut at a character boundary when the context is attached.
    public init(requestID: String = "", method: String = "", route: String = "", path: String = "", query: String = "",
                traceID: String = "", spanID: String = "", parentSpanID: String = "", sampled: Bool = false,
                attributes: [String: String] = [:]) {
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
    }

    /// Continues the trace a W3C `traceparent` header (`00-<trace id>-<parent id>-<flags>`)
    /// names: its trace id, its parent id as `parentSpanID`, its sampled flag, and a new random
    /// `spanID` for this request. Returns `false`, changing nothing, when the header is not a
    /// valid traceparent (an all-zero id included).
    @discardableResult
    public mutating func continueTrace(traceparent: String) -> Bool {
        // W3C Trace Context: version-traceid-parentid-flags in lowercase hex, ids not all zero,
        // version ff invalid, version 00 exactly 55 characters (a later version may add fields
        // after a dash). Read in place: a middleware does this for every request.
        var header = traceparent
        let parsed: (trace: String, parent: String, flags: UInt8)? = header.withUTF8 { bytes in
            guard bytes.count >= 55, bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-"),
                  let version = Hex.byte(bytes[0], bytes[1]), version != 0xFF,
                  bytes.count == 55 || (version != 0 && bytes[55] == UInt8(ascii: "-")),
                  Hex.isID(bytes[3..<35]), Hex.isID(bytes[36..<52]), let flags = Hex.byte(bytes[53], bytes[54])
            else { return nil }
            return (String(decoding: bytes[3..<35], as: UTF8.self), String(decoding: bytes[36..<52], as: UTF8.self), flags)
        }
        guard let parsed else { return false }
        traceID = parsed.trace
        parentSpanID = parsed.parent
        let flags = parsed.flags
        spanID = Hex.newSpanID()
        sampled = flags & 1 == 1
        return true
    }

    /// The trace of a server request, for the framework integrations: the span a tracer made
    /// current for it when there is one, else a continuation of the request's `traceparent`
    /// header (``continueTrace(traceparent:)``). `tracer` is the `traceparent` the tracer's
    /// instrument writes for its current context: its parent-id field is that span's id. The
    /// header's parent id is this span's parent when both name the same trace. A tracer that
    /// only passed the header on (its span id is the header's parent id) has no span of its
    /// own: the header is continued. Changes nothing when neither is a valid traceparent.
    package mutating func takeTrace(header: String?, tracer: String?) {
        var incoming = CrashContext()
        let hasHeader = header.map { incoming.continueTrace(traceparent: $0) } ?? false
        var current = CrashContext()
        if let tracer, current.continueTrace(traceparent: tracer), !(hasHeader && current.parentSpanID == incoming.parentSpanID) {
            traceID = current.traceID
            spanID = current.parentSpanID
            parentSpanID = hasHeader && incoming.traceID == current.traceID ? incoming.parentSpanID : ""
            sampled = current.sampled
        } else if hasHeader {
            traceID = incoming.traceID
            spanID = incoming.spanID
            parentSpanID = incoming.parentSpanID
            sampled = incoming.sampled
        }
    }

    /// Runs `operation` with this context attached to the current task: a crash in it, or in a
    /// child task or an unstructured `Task` it creates, names this request; a crash anywhere
    /// else lists it among the requests in flight. Detached when `operation` returns or throws.
    /// Contexts nest: the innermost one names the crash.
    public static func withValue<R>(
        _ context: CrashContext, isolation: isolated (any Actor)? = #isolation, operation: () async throws -> R
    ) async rethrows -> R {
        let task = currentTaskAddress()
        let handle = context.attach(key: task, flags: 0)
        guard handle != 0 else { return try await operation() }
        defer { cc_context_detach(handle) }
        return try await $handle.withValue(handle, operation: {
            // Known (and checked now) or failed for good: on with the request at once.
            if cc_context_check(task, taskLocalKey, handle) < 2 { await confirmLayout(task: task, handle: handle) }
            return try await operation()
        }, isolation: isolation)
    }

    /// Runs `operation` with this context attached to the calling thread rather than to a task:
    /// for work that runs on a thread of its own (an event loop's synchronous callback, a worker
    /// thread). It names the crash of this thread when no task's context does.
    public static func withThreadValue<R>(_ context: CrashContext, operation: () throws -> R) rethrows -> R {
        let handle = context.attach(key: 0, flags: UInt32(CC_REQUEST_THREAD))
        defer { cc_context_detach(handle) }
        return try operation()
    }

    /// Sets the route template of the context the current task serves (a router knows it only
    /// once it has matched the request). Returns `false` when no context is attached here.
    @discardableResult
    public static func setRoute(_ route: String) -> Bool {
        let handle = CrashContext.handle
        guard handle != 0 else { return false }
        var route = route
        return route.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { cc_context_set_route(handle, $0.baseAddress, $0.count) == 0 }
        }
    }

    // MARK: The record's entry

    /// The handle of the context the current task serves (0: none); its object is the key the C
    /// core looks for among the crashed task's task-local bindings.
    @TaskLocal static var handle: UInt64 = 0

    /// Attaches this context to the table (`key` and `flags` as cc_context_begin takes them),
    /// filled in place; the handle, 0 when the table is full.
    func attach(key: UInt64, flags: UInt32) -> UInt64 {
        var body: UnsafeMutablePointer<cc_sec_request_t>?
        let handle = cc_context_begin(key, flags, &body)
        guard handle != 0, let body else { return 0 }
        fill(body)
        cc_context_commit(handle)
        return handle
    }

    /// The record's layout of this context (cc_sec_request_t), as a value (for tests).
    func recordBody(flags: UInt32, key: UInt64) -> cc_sec_request_t {
        var body = cc_sec_request_t()
        body.key = key
        body.flags = flags
        fill(&body)
        return body
    }

    /// Writes this context into a zeroed record body whose key and flags are set.
    private func fill(_ body: UnsafeMutablePointer<cc_sec_request_t>) {
        if sampled { body.pointee.flags |= UInt32(CC_REQUEST_SAMPLED) }
        if Hex.parse(traceID, into: &body.pointee.trace_id, bytes: 16), Hex.parse(spanID, into: &body.pointee.span_id, bytes: 8) {
            body.pointee.flags |= UInt32(CC_REQUEST_HAS_TRACE)
            if Hex.parse(parentSpanID, into: &body.pointee.parent_span_id, bytes: 8) { body.pointee.flags |= UInt32(CC_REQUEST_HAS_PARENT) }
        } else {
            body.pointee.trace_id = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            body.pointee.span_id = (0, 0, 0, 0, 0, 0, 0, 0)
        }
        Self.copy(requestID, into: &body.pointee.request_id)
        Self.copy(method, into: &body.pointee.method)
        Self.copy(route, into: &body.pointee.route)
        Self.copy(path, into: &body.pointee.path)
        Self.copy(query, into: &body.pointee.query)
        if !attributes.isEmpty {
            withUnsafeMutableBytes(of: &body.pointee.attributes) { field in
                var used = 0
                for key in attributes.keys.sorted() {
                    let entry = Array("\(key)=\(attributes[key] ?? "")".utf8)
                    // The entry, its NUL, and the empty entry that ends them must fit.
                    guard used + entry.count + 2 <= field.count else { continue }
                    field.baseAddress!.advanced(by: used).copyMemory(from: entry, byteCount: entry.count)
                    used += entry.count + 1
                }
            }
        }
    }

    /// `text` into a NUL-terminated fixed field of the record, cut at a character boundary.
    private static func copy<Field>(_ text: String, into field: inout Field) {
        guard !text.isEmpty else { return }
        var text = text
        text.withUTF8 { utf8 in
            withUnsafeMutableBytes(of: &field) { raw in
                var length = min(utf8.count, raw.count - 1)
                while length > 0, length < utf8.count, utf8[length] & 0xC0 == 0x80 { length -= 1 }
                raw.baseAddress!.copyMemory(from: utf8.baseAddress!, byteCount: length)
            }
        }
    }

    // MARK: Where the runtime keeps the current task and its task-local bindings

    /// The current task's address, 0 outside a task.
    static func currentTaskAddress() -> UInt64 {
        withUnsafeCurrentTask { task in task.map { UInt64(UInt(bitPattern: unsafeBitCast($0, to: Int.self))) } ?? 0 }
    }

    /// The object the handles are bound to (the runtime's task-local key).
    static var taskLocalKey: UInt64 { UInt64(UInt(bitPattern: ObjectIdentifier($handle))) }

    /// Whether this process has begun looking for the runtime's layout (once).
    private static let probing = Atomic<Bool>(false)

    /// Inside the binding of `handle` in `task`, while the layout is not known yet: looks for it
    /// from this task and, the first time, two child tasks (cc_context_probe needs three) before the
    /// request runs, so that even the first request of a process can be named. A request that
    /// arrives while another probes offers its own task and waits for the answer (a few
    /// scheduler turns, once per process).
    private static func confirmLayout(task: UInt64, handle: UInt64) async {
        let key = taskLocalKey
        _ = cc_context_probe(task, key, handle)
        if probing.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            await withTaskGroup(of: Void.self) { group in
                for index in 1...2 {
                    group.addTask {
                        let value = 0xCC5A_0000_0000_0000 | UInt64(index)
                        $handle.withValue(value) { _ = cc_context_probe(currentTaskAddress(), key, value) }
                    }
                }
            }
        }
        for _ in 0..<100 where cc_context_layout() < 2 { await Task.yield() }
    }
}

/// Hex ids: W3C trace-context's lowercase hex, parsed into and made for the record's bytes.
enum Hex {
    /// A lowercase hex digit's value.
    static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        default: return nil
        }
    }

    /// Two lowercase hex digits' value.
    static func byte(_ high: UInt8, _ low: UInt8) -> UInt8? {
        guard let high = nibble(high), let low = nibble(low) else { return nil }
        return high << 4 | low
    }

    /// Lowercase hex digits, not all zero (a W3C id).
    static func isID(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        digits.allSatisfy { nibble($0) != nil } && digits.contains { $0 != UInt8(ascii: "0") }
    }

    /// `text` (exactly `bytes` * 2 lowercase hex digits, not all zero) into `field`; false,
    /// leaving it, otherwise. No allocation: it runs for every request.
    static func parse<Field>(_ text: String, into field: inout Field, bytes: Int) -> Bool {
        let utf8 = text.utf8
        guard utf8.count == bytes * 2, MemoryLayout<Field>.size == bytes else { return false }
        var nonZero = false
        let parsed: Bool = withUnsafeMutableBytes(of: &field) { out in
            var index = utf8.startIndex
            for i in 0..<bytes {
                let high = utf8[index]
                index = utf8.index(after: index)
                let low = utf8[index]
                index = utf8.index(after: index)
                guard let value = byte(high, low) else { return false }
                out[i] = value
                nonZero = nonZero || value != 0
            }
            return true
        }
        guard parsed, nonZero else {
            withUnsafeMutableBytes(of: &field) { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
            return false
        }
        return true
    }

    /// A new span id: 16 lowercase hex digits, never all zero. splitmix64 over a per-process
    /// random seed and a counter: unique in the process, unpredictable across processes, and
    /// without a system call per request (SystemRandomNumberGenerator makes one per call).
    static func newSpanID() -> String {
        var value: UInt64 = 0
        repeat {
            var z = spanSeed &+ spanCounter.wrappingAdd(1, ordering: .relaxed).newValue &* 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            value = z ^ (z >> 31)
        } while value == 0
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 16) { buffer in
            digits.withUTF8Buffer { hex in
                for i in 0..<16 { buffer[i] = hex[Int((value >> UInt64(60 - 4 * i)) & 15)] }
            }
            return 16
        }
    }

    private static let spanSeed = UInt64.random(in: .min ... .max)
    private static let spanCounter = Atomic<UInt64>(0)
}
