// SentryEvent.swift — the JSON shapes of a Sentry envelope as types: the envelope and item headers
// and the event (Sentry's event protocol, the fields sentry-native's inproc backend fills), with the
// one encoder they are written by.
import CrashRecordFormat

/// The event item of a crash's envelope. Optional fields that are nil are left out.
package struct SentryEvent: Encodable, Sendable, Equatable {
    package var eventID: String
    package var platform = "native"
    package var level = "fatal"
    /// The crash time, seconds since the epoch.
    package var timestamp: Double?
    package var release: String?
    /// The deployment the crashed run belonged to (Sentry files an event without one under `production`).
    package var environment: String?
    /// The build of the release (`SENTRY_DIST`).
    package var dist: String?
    /// The host the crash happened on, where the data policy lets the host's details leave.
    package var serverName: String?
    package var exception: Values<Exception>
    package var threads: Values<Thread>
    package var debugMeta: DebugMeta
    package var contexts: Contexts
    package var tags: [String: String]
    /// The app's user (its scope), where the data policy lets identity leave.
    package var user: User?
    package var breadcrumbs: Values<Breadcrumb>
    /// The HTTP request the crashed thread was serving (``SentryEnvelope/describeRequests(of:in:)``).
    package var request: Request?
    package var extra: [String: Extra]?
    /// How Sentry groups it, where the frames alone would not (a deadlock: by the cycle's frames).
    package var fingerprint: [String]?
    /// Where it happened, as the subtitle, when the frames would not say it: a crash with
    /// no frame of the app's own is placed at its innermost package frame.
    package var culprit: String? = nil

    enum CodingKeys: String, CodingKey {
        case eventID = "event_id", platform, level, timestamp, release, environment, dist, serverName = "server_name", exception, threads
        case debugMeta = "debug_meta", contexts, tags, user, breadcrumbs, request, extra, fingerprint, culprit
    }

    /// Sentry's `user` interface.
    package struct User: Encodable, Sendable, Equatable {
        package var id: String?
        package var username: String?
        package var email: String?
        package var ipAddress: String?

        enum CodingKeys: String, CodingKey {
            case id, username, email, ipAddress = "ip_address"
        }
    }

    /// A value of `extra`: a text, the other requests in flight, or key/values.
    package enum Extra: Encodable, Sendable, Equatable {
        case text(String)
        case requests([InFlightRequest])
        case pairs([String: String])

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .text(let text): try container.encode(text)
            case .requests(let requests): try container.encode(requests)
            case .pairs(let pairs): try container.encode(pairs)
            }
        }
    }

    /// One entry of `extra.requests_in_flight`: a request lost with the process.
    package struct InFlightRequest: Encodable, Sendable, Equatable {
        package var id: String
        package var method: String
        /// The route's template, else the path.
        package var route: String
        package var traceID: String?
        /// Seconds it had been in flight at the crash.
        package var age: Double?
        /// In a hang or snapshot: where its task waits, the function it resumes in first, then its
        /// callers (names as found on this machine, else `image+0xoffset`).
        package var waitsIn: [String]?
        /// The runtime's leaked-continuation warning for the function it waits in: nothing can
        /// resume it.
        package var leakedContinuation: String?

        enum CodingKeys: String, CodingKey {
            case id, method, route, traceID = "trace_id", age, waitsIn = "waits_in", leakedContinuation = "leaked_continuation"
        }
    }

    /// Sentry's `request` interface. Headers, cookies, body and environment are never sent:
    /// CrashCapture captures none of them.
    package struct Request: Encodable, Sendable, Equatable {
        package var method: String?
        /// The path as requested: relative (the scheme and host are not known), which Relay
        /// keeps as it is.
        package var url: String?
        /// Only where the data policy lets the query leave (`requestQuery`).
        package var queryString: String?

        enum CodingKeys: String, CodingKey {
            case method, url, queryString = "query_string"
        }
    }

    /// Sentry's `{"values": [...]}` wrapper.
    package struct Values<Value: Encodable & Sendable & Equatable>: Encodable, Sendable, Equatable {
        package var values: [Value]
    }

    package struct Exception: Encodable, Sendable, Equatable {
        package var type: String
        package var value: String
        package var mechanism: Mechanism
        package var threadID: Int?
        package var stacktrace: Stacktrace?

        enum CodingKeys: String, CodingKey {
            case type, value, mechanism, threadID = "thread_id", stacktrace
        }
    }

    /// How the crash was caught: a signal handler, not handled, synthetic (no exception object).
    package struct Mechanism: Encodable, Sendable, Equatable {
        package var type = "signalhandler"
        package var handled = false
        package var synthetic = true
        package var meta: Meta?

        package struct Meta: Encodable, Sendable, Equatable {
            package var signal: Signal
        }

        package struct Signal: Encodable, Sendable, Equatable {
            package var number: Int
            package var code: Int
            package var name: String?
            package var codeName: String?

            enum CodingKeys: String, CodingKey {
                case number, code, name, codeName = "code_name"
            }
        }
    }

    package struct Stacktrace: Encodable, Sendable, Equatable {
        /// Outermost caller first.
        package var frames: [Frame]
        /// "all_but_first", "all" or "none": which addresses Sentry moves back into their call.
        package var instructionAddrAdjustment: String
        package var registers: [String: String]?

        enum CodingKeys: String, CodingKey {
            case frames, instructionAddrAdjustment = "instruction_addr_adjustment", registers
        }
    }

    package struct Frame: Encodable, Sendable, Equatable {
        package var instructionAddr: String
        /// The image's path (`code_file`).
        package var package: String?
        /// The function's short name (Swift's backtracer's simplified form), as Sentry shows it.
        /// Named here from the image's own symbol table; Sentry's symbolication with an uploaded
        /// debug file replaces it (and adds file and line), as it does sentry-native's
        /// `symbolize_stacktraces` names.
        package var function: String?
        /// The function's full demangled name, when it says more than `function`.
        package var rawFunction: String? = nil
        /// The symbol as the image's table has it (mangled).
        package var symbol: String? = nil
        /// The function's first instruction.
        package var symbolAddr: String? = nil
        /// The program's own code (``FrameOrigin``): not a package it links, the runtime or libc.
        package var inApp: Bool? = nil

        enum CodingKeys: String, CodingKey {
            case instructionAddr = "instruction_addr", package, function, rawFunction = "raw_function", symbol,
                 symbolAddr = "symbol_addr", inApp = "in_app"
        }
    }

    package struct Thread: Encodable, Sendable, Equatable {
        package var id: Int
        package var crashed: Bool
        package var current: Bool
        package var name: String?
        package var stacktrace: Stacktrace?
        /// Sentry's thread `state` (as its SDKs send a JVM thread's): in a hang or snapshot, the
        /// scheduler's state before the record — `Runnable`, `Waiting`, `DiskWait`, …
        package var state: String? = nil
        /// Sentry's lock reasons (as its SDKs send a JVM thread's monitors), keyed by the lock's
        /// address: the lock a blocked thread waits on (`blocked`, with its holder), and on the
        /// holder's thread the same lock (`locked`).
        package var heldLocks: [String: LockReason]? = nil

        enum CodingKeys: String, CodingKey {
            case id, crashed, current, name, stacktrace, state, heldLocks = "held_locks"
        }
    }

    /// Sentry's lock reason interface.
    package struct LockReason: Encodable, Sendable, Equatable {
        /// 1 locked, 2 waiting, 4 sleeping, 8 blocked.
        package var type: Int
        package var address: String
        /// What kind of lock: `pthread_mutex_t`, `pthread_rwlock_t`, `Synchronization.Mutex`, `futex`.
        package var className: String?
        /// The holder, on a blocked thread's reason.
        package var threadID: Int?

        enum CodingKeys: String, CodingKey {
            case type, address, className = "class_name", threadID = "thread_id"
        }
    }

    package struct DebugMeta: Encodable, Sendable, Equatable {
        package var images: [Image]
    }

    package struct Image: Encodable, Sendable, Equatable {
        package var type = "elf"
        package var codeFile: String
        package var debugID: String
        package var imageAddr: String
        package var imageSize: Int
        package var codeID: String?

        enum CodingKeys: String, CodingKey {
            case type, codeFile = "code_file", debugID = "debug_id", imageAddr = "image_addr", imageSize = "image_size", codeID = "code_id"
        }
    }

    package struct Contexts: Encodable, Sendable, Equatable {
        package var os: OS
        package var device: Device
        package var app: App
        /// The trace of the request the crashed thread was serving.
        package var trace: Trace?
        /// The Swift runtime (the toolchain the reporter was built with, as the app was).
        package var runtime: Runtime?
        /// The container the crash happened in, and its Kubernetes pod (custom contexts).
        package var container: Container?
        package var kubernetes: Kubernetes?
        /// What the process had and was allowed at the crash (a custom context): its descriptors
        /// and their limit, threads, peak memory, its cgroup's memory and limit, what stands out.
        package var resources: Resources?
        /// The app's named contexts (its scope), each under its own name; a name the reporter
        /// fills itself (``reservedNames``) is left out.
        package var appContexts: [String: [String: String]] = [:]

        enum CodingKeys: String, CodingKey, CaseIterable {
            case os, device, app, trace, runtime, container, kubernetes = "k8s", resources
        }

        /// The names of the contexts the reporter fills.
        package static let reservedNames = Set(CodingKeys.allCases.map(\.rawValue))

        private struct Name: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        package func encode(to encoder: any Encoder) throws {
            var fixed = encoder.container(keyedBy: CodingKeys.self)
            try fixed.encode(os, forKey: .os)
            try fixed.encode(device, forKey: .device)
            try fixed.encode(app, forKey: .app)
            try fixed.encodeIfPresent(trace, forKey: .trace)
            try fixed.encodeIfPresent(runtime, forKey: .runtime)
            try fixed.encodeIfPresent(container, forKey: .container)
            try fixed.encodeIfPresent(kubernetes, forKey: .kubernetes)
            try fixed.encodeIfPresent(resources, forKey: .resources)
            var named = encoder.container(keyedBy: Name.self)
            for (name, facts) in appContexts where !Self.reservedNames.contains(name) {
                try named.encode(facts, forKey: Name(stringValue: name))
            }
        }
    }

    package struct Runtime: Encodable, Sendable, Equatable {
        package var type = "runtime"
        package var name = "swift"
        package var version: String
    }

    package struct Container: Encodable, Sendable, Equatable {
        package var type = "container"
        package var id: String
    }

    package struct Kubernetes: Encodable, Sendable, Equatable {
        package var type = "k8s"
        package var namespace: String?
        package var pod: String?
    }

    /// `contexts.trace`: the crashed request's span in its W3C trace, so that Sentry shows the
    /// crash in that trace.
    package struct Trace: Encodable, Sendable, Equatable {
        package var type = "trace"
        package var traceID: String
        package var spanID: String
        package var parentSpanID: String?
        package var op: String?
        /// The span ended in a crash.
        package var status = "internal_error"

        enum CodingKeys: String, CodingKey {
            case type, traceID = "trace_id", spanID = "span_id", parentSpanID = "parent_span_id", op, status
        }
    }

    /// `contexts.os` (see ``SentryEnvelope/osContext(kernel:osRelease:)``).
    package struct OS: Encodable, Sendable, Equatable {
        package var type = "os"
        package var name: String
        package var version: String?
        package var build: String?
        package var kernelVersion: String?
        package var distributionName: String?
        package var distributionVersion: String?
        package var distributionPrettyName: String?

        enum CodingKeys: String, CodingKey {
            case type, name, version, build, kernelVersion = "kernel_version", distributionName = "distribution_name"
            case distributionVersion = "distribution_version", distributionPrettyName = "distribution_pretty_name"
        }
    }

    package struct Device: Encodable, Sendable, Equatable {
        package var type = "device"
        package var arch: String
        /// Total memory, bytes.
        package var memorySize: Int64?
        /// Memory available for new work at the crash (`MemAvailable`), bytes.
        package var freeMemory: UInt64?
        /// The CPUs the process could run on, and the processor.
        package var processorCount: Int?
        package var cpuDescription: String?

        enum CodingKeys: String, CodingKey {
            case type, arch, memorySize = "memory_size", freeMemory = "free_memory", processorCount = "processor_count"
            case cpuDescription = "cpu_description"
        }
    }

    /// The `resources` context (see ``Contexts/resources``).
    package struct Resources: Encodable, Sendable, Equatable {
        package var type = "resources"
        package var openDescriptors: Int?
        package var descriptorLimit: UInt64?
        package var threads: Int?
        package var peakResidentBytes: UInt64?
        package var cgroupMemoryBytes: UInt64?
        package var cgroupMemoryLimitBytes: UInt64?
        package var cgroupOOMKills: UInt64?
        package var load: [Double]?
        /// What stands out, worst first ("at the limit (RLIMIT_NOFILE)", "at 98 % of the cgroup's memory limit").
        package var findings: [String]?

        enum CodingKeys: String, CodingKey {
            case type, openDescriptors = "open_descriptors", descriptorLimit = "descriptor_limit", threads
            case peakResidentBytes = "peak_resident_bytes", cgroupMemoryBytes = "cgroup_memory_bytes"
            case cgroupMemoryLimitBytes = "cgroup_memory_limit_bytes", cgroupOOMKills = "cgroup_oom_kills", load, findings
        }
    }

    package struct App: Encodable, Sendable, Equatable {
        package var type = "app"
        package var appName: String
        package var appVersion: String
        /// The process's resident memory at the crash (`VmRSS`), bytes.
        package var appMemory: UInt64?

        enum CodingKeys: String, CodingKey {
            case type, appName = "app_name", appVersion = "app_version", appMemory = "app_memory"
        }
    }

    package struct Breadcrumb: Encodable, Sendable, Equatable {
        package var timestamp: Double
        package var level: String
        package var message: String
    }
}

/// An envelope's first line.
struct SentryEnvelopeHeader: Encodable {
    /// The event's id; none in an envelope of sessions alone.
    var eventID: String?
    /// RFC 3339; left out for an envelope sent later (see ``SentryEnvelope/make(record:rawRecord:fileName:eventID:sentAt:frames:osRelease:readImageFiles:)``).
    var sentAt: String?
    var trace: SentryTraceHeader?

    enum CodingKeys: String, CodingKey {
        case eventID = "event_id", sentAt = "sent_at", trace
    }
}

/// The envelope header's `trace`: Sentry's dynamic sampling context, as sentry-python writes it
/// (`Baggage.dynamic_sampling_context()`: every value a string) and Relay reads it
/// (`DynamicSamplingContext`: `trace_id` and `public_key` required, the rest optional).
package struct SentryTraceHeader: Encodable, Sendable, Equatable {
    package var traceID: String
    /// The DSN's public key: the project the trace's sampling rules are looked up in.
    package var publicKey: String
    package var release: String?
    package var environment: String?
    /// `"true"` or `"false"`: the traceparent's sampled flag.
    package var sampled: String?

    enum CodingKeys: String, CodingKey {
        case traceID = "trace_id", publicKey = "public_key", release, environment, sampled
    }
}

/// The header line of an envelope item.
struct SentryItemHeader: Encodable {
    var type: String
    var length: Int
    var contentType: String
    var filename: String?
    var attachmentType: String?

    enum CodingKeys: String, CodingKey {
        case type, length, contentType = "content_type", filename, attachmentType = "attachment_type"
    }
}

extension SentryEnvelope {
    /// The one encoder every line of an envelope is written with: keys sorted (stable bytes for
    /// the same record), slashes as they are.
    static func json(_ value: some Encodable) -> [UInt8] {
        // Every value here is a string, a finite number or a bool: it cannot fail.
        (try? SortedJSONEncoder().encode(value)) ?? Array("{}".utf8)
    }
}
