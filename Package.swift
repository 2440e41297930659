// swift-tools-version:6.2
import Foundation
import PackageDescription

let package = Package(
    name: "CrashCapture",
    products: [
        // What a program links to have its crashes recorded: signal handlers, the record writer,
        // breadcrumbs. No Foundation, no analytics.
        .library(name: "CrashCapture", targets: ["CrashCapture"]),
        // Capture plus the next launch: the launch, the record inbox, the runs, the Sentry sink and
        // the app's own sinks. No SQLite, no analytics: a Sentry-only program links neither.
        .library(name: "CrashReporter", targets: ["CrashReporter"]),
        // The Sensors analytics, one sink of CrashReporting among others: the event model, the
        // SQLite tracking store and its tracker, the events sink and the crash `$AppEnd`.
        .library(name: "SensorsAnalytics", targets: ["SensorsAnalytics"]),
        // Reading crash records, for a tool of your own.
        .library(name: "CrashRecordFormat", targets: ["CrashRecordFormat"]),
        // The offline inspector: list, show, symbolicate, group, export.
        .executable(name: "crash-inspect", targets: ["crash-inspect"]),
        // The analytics' tracking store at a glance (pending, quarantined, the last upload), read-only.
        .executable(name: "sensors-store", targets: ["sensors-store"]),
        // Every way a Linux Swift program dies, performed and verified (the test harness).
        .executable(name: "crash-harness", targets: ["crash-harness"]),
        // Crash-time upload: what a crashing process starts to send its record to Sentry (off by
        // default; CrashReporting's crashTimeUploader). Ship it beside the program.
        .executable(name: "crash-uploader", targets: ["crash-uploader"]),
        // Server integrations, each behind a trait of the same name (off by default): a Hummingbird 2
        // middleware, a Vapor 4 middleware, a grpc-swift 2 server interceptor, and capture as a
        // swift-service-lifecycle Service.
        .library(name: "CrashCaptureHummingbird", targets: ["CrashCaptureHummingbird"]),
        .library(name: "CrashCaptureVapor", targets: ["CrashCaptureVapor"]),
        .library(name: "CrashCaptureGRPC", targets: ["CrashCaptureGRPC"]),
        .library(name: "CrashCaptureServiceLifecycle", targets: ["CrashCaptureServiceLifecycle"]),
        // Opt-in: replaces the process's malloc and free with a sampled guarded heap (a program
        // that links it; CRASHCAPTURE_GUARDED_HEAP turns it on). Linking CrashCapture never does.
        .library(name: "CrashCaptureGuardedHeap", targets: ["CrashCaptureGuardedHeap"]),
    ],
    // Heavy integrations (a web framework) must not be built by every adopter of the core. A
    // dependency below that only a trait's targets use (`condition: .when(traits:)`) is neither
    // fetched nor built unless the adopter enables that trait:
    //     .package(url: "…/CrashCapture", from: "…", traits: ["Hummingbird"])
    // (measured with SwiftPM 6.3: without the trait, `swift package resolve` leaves no vapor or
    // hummingbird checkout). The integration targets' code is inside `#if <trait>`: without it they
    // compile empty. Traits rather than packages of their own in subdirectories: SwiftPM cannot
    // depend by URL on a package in a repository's subdirectory.
    traits: [
        .trait(name: "Hummingbird", description: "CrashCaptureHummingbird: each request's CrashContext from a Hummingbird 2 middleware."),
        .trait(name: "Vapor", description: "CrashCaptureVapor: each request's CrashContext from a Vapor 4 middleware."),
        .trait(name: "GRPC", description: "CrashCaptureGRPC: each RPC's CrashContext from a grpc-swift 2 server interceptor."),
        .trait(name: "ServiceLifecycle", description: "CrashCaptureServiceLifecycle: capture, or the whole reporter, started as a swift-service-lifecycle Service."),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Only for the traits' targets (fetched only when one of them is enabled).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        // Hummingbird's event loops, which hang detection watches (Hummingbird does not re-export NIO).
        .package(url: "https://github.com/apple/swift-nio", from: "2.90.0"),
        .package(url: "https://github.com/vapor/vapor", from: "4.122.3"),
        .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.3"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // `swift package generate-documentation`: builds the DocC catalogs (Sources/<Module>/<Module>.docc).
        // A plugin only: nothing of it is linked into any product.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // MARK: - The record: one layout, its reader, the host's facts

        // The record layout (cc_record.h): the one header the writer and the readers share.
        .target(name: "CCrashRecordLayout", path: "Sources/CCrashRecordLayout"),
        // Reading records: the typed model and the reader. No signal handler, no interposed
        // libc function: tools that only read records (crash-inspect, symbolication, the
        // fuzzer) link this, not CrashCapture.
        .target(name: "CrashRecordFormat", dependencies: ["CCrashRecordLayout"]),
        // Facts about this host and library that every sink names (os-release, the library's name
        // and version): neutral, so that a sink never imports another sink's model for them.
        .target(name: "HostFacts"),

        // MARK: - Capture: what runs in the crashing process

        // The only code that runs after a fatal signal. C, async-signal-safe, at the top level.
        // It needs nothing outside the C library: it unwinds by the images' own call-frame
        // information (cc_cfi.c), so a program needs no unwinding library, at build or run time.
        // Laid out by concern (cc_internal.h's head): install/ (installing and chaining), crash/ (the
        // handler), record/ (the writer and the sections), unwind/, threads/ (the other threads and
        // the ptrace helper), swift/ (the runtime's layouts), live/ (hangs and snapshots), upload/;
        // the headers every part shares at the top.
        .target(name: "CShims", dependencies: ["CCrashRecordLayout"], path: "CShims",
                cSettings: [.headerSearchPath(".")], cxxSettings: [.headerSearchPath(".")]),
        .target(
            name: "CrashCapture",
            // No Foundation, no event model: what capture links is what every adopter loads.
            dependencies: ["CShims", "CrashRecordFormat", "HostFacts", .product(name: "Logging", package: "swift-log")]
        ),

        // MARK: - Delivery: the next launch, the inbox, the run ledger and the sinks (leaves)

        // What a sink is and is given (CrashRecordSink, InboxRecord, the runs), and what sending
        // sinks share (the leased queue, DeliveryRule, the data policy). Re-exported by CrashReporter.
        .target(name: "RecordDelivery", dependencies: ["CrashRecordFormat", "HostFacts", "HTTPExchange", .product(name: "Logging", package: "swift-log")]),
        // The launch after a crash: every record to every sink, the runs (the run ledger), the
        // crash-time upload. Names no sink in its launch or its end of run.
        .target(
            name: "CrashReporter",
            dependencies: ["CrashCapture", "RecordDelivery", "HostFacts", "CrashReporterSentry", "CrashReporterOTLP", "HTTPExchange",
                           .product(name: "Logging", package: "swift-log")]
        ),
        // The Sentry sink: envelopes over HTTP, sessions, rate limits (a leaf: RecordDelivery only).
        .target(
            name: "CrashReporterSentry",
            dependencies: ["RecordDelivery", "CrashSentry", "CrashMinidump", "CrashRecordFormat", "HostFacts", "HTTPExchange",
                           .product(name: "Logging", package: "swift-log")]
        ),
        // The OpenTelemetry sink: OTLP/HTTP log records (a leaf: RecordDelivery only).
        .target(
            name: "CrashReporterOTLP",
            dependencies: ["RecordDelivery", "CrashOTLP", "CrashRecordFormat", "HostFacts", "HTTPExchange", .product(name: "Logging", package: "swift-log")]
        ),
        // A crash record as a Sentry envelope (event, debug images with code and debug ids, the
        // record attached): the one builder crash-inspect's export and the Sentry sink share.
        .target(name: "CrashSentry", dependencies: ["HostFacts", "CrashRecordFormat", "CrashFrames"]),
        // A crash record as one OpenTelemetry log record (OTLP's protobuf, written by hand), and the
        // OTLP exporter's environment variables: what the OTLP sink sends. No HTTP.
        .target(name: "CrashOTLP", dependencies: ["HostFacts", "CrashRecordFormat", "CrashFrames"]),
        // A crash record as a Linux minidump (threads, contexts, modules with build-ids, the
        // exception, memory): what crash-inspect's export writes and the Sentry sink can attach.
        // Reads records only: no Foundation, no handler.
        .target(name: "CrashMinidump", dependencies: ["CrashRecordFormat"]),
        // A record's frames as Swift's backtracer shows them, named from the images' own ELF symbol
        // tables; the one-line crash summary. No Foundation: the reporter's sinks link it.
        .target(name: "CrashFrames", dependencies: ["CrashRecordFormat"]),
        // Offline symbolication by build-id with the toolchain's llvm-symbolizer, debuginfod and a
        // symbol store: the inspector's and the tests' (re-exports CrashFrames).
        .target(name: "CrashSymbolication", dependencies: ["CrashRecordFormat", "CrashFrames", "ProcessSpawning", "HTTPExchange"]),
        // One HTTP request with a bound, cancellation, Retry-After, backoff: the /sa uploader, the
        // Sentry and OTLP sinks and the debuginfod client all talk HTTP through it. No FoundationNetworking.
        .target(name: "HTTPExchange", dependencies: ["CHTTPCurl"]),
        // One HTTP request through libcurl, dlopen'ed on the first request (never at exec: a program
        // that never sends loads none of libcurl's ~30 libraries). dlopen is in libc (glibc 2.34+).
        .target(name: "CHTTPCurl", path: "Sources/CHTTPCurl"),
        // zlib, for the gzip body of uploads.
        .target(name: "CZlib", path: "Sources/CZlib", linkerSettings: [.linkedLibrary("z")]),

        // MARK: - Analytics: one sink among others (the only modules that link SQLite)

        // The event vocabulary (identity, preset properties, JSON text, the /sa wire format).
        .target(name: "SensorsEvents", dependencies: ["HostFacts", "CrashRecordFormat", "CZlib"]),
        // The system's SQLite (libsqlite3), for the tracking store alone: loaded when a store is first
        // opened (dlopen), not linked, so a quiet run of a program with the analytics never maps it.
        .target(name: "CSQLite", path: "Sources/CSQLite"),
        // The tracking store (SQLite, through a small layer of its own) and the uploader. Knows
        // nothing of signals or records.
        .target(name: "SensorsTracking", dependencies: ["SensorsEvents", "HostFacts", "CZlib", "CSQLite", "HTTPExchange"]),
        // The Sensors analytics as a sink of CrashReporting: records and runs become events in the
        // tracking store, and the tracker is the reporter's client.
        .target(name: "SensorsAnalytics", dependencies: ["CrashReporter", "CrashCapture", "HostFacts", "SensorsEvents", "SensorsTracking", "CrashRecordFormat", "CrashFrames"]),
        // The tracking store's state, read-only: pending, quarantined and evicted counts, the last upload.
        .executableTarget(
            name: "sensors-store",
            dependencies: ["SensorsTracking", "CrashInspection", "CrashRecordFormat", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),

        // MARK: - Tools: the inspector, the crash-time uploader, the harness

        // The offline inspector: explanations, rendering, grouping.
        .target(name: "CrashInspection", dependencies: ["CrashRecordFormat", "CrashSymbolication"]),
        .executableTarget(
            name: "crash-inspect",
            dependencies: [
                "CrashInspection", "CrashRecordFormat", "CrashSentry", "CrashMinidump", "CrashSymbolication",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Started by a crashing process's handler to send its record to Sentry and/or an OTLP collector (CrashTimeUpload).
        .executableTarget(
            name: "crash-uploader",
            // No argument parser: it would bring FoundationEssentials into a program that starts at a crash.
            dependencies: ["CrashReporter", "CrashReporterSentry", "CrashReporterOTLP", "CrashRecordFormat"]
        ),
        // Child processes: posix_spawn, wait with a deadline, exact signal, leftovers of a process group.
        .target(name: "ProcessSpawning"),
        // Deliberate crashes for the harness, in C so each dies exactly as its name says.
        .target(name: "CCrashScenarios", path: "Sources/CCrashScenarios"),
        // The one scenario table, the runner and the verifier: used by crash-harness and the tests.
        .target(
            name: "CrashScenarios",
            dependencies: [
                "CrashCapture", "HostFacts", "SensorsEvents", "CrashReporter", "SensorsAnalytics", "CCrashScenarios", "CrashSymbolication", "ProcessSpawning",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "crash-harness",
            dependencies: [
                "CrashCapture", "HostFacts", "SensorsEvents", "CrashScenarios", "CrashSymbolication", "CCrashScenarios", "SensorsTracking", "CrashReporter", "CrashReporterSentry", "CrashReporterOTLP", "SensorsAnalytics",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // A C++ library and a Swift program built with C++ interoperability that calls it: an
        // uncaught C++ exception crossing a Swift frame (CxxExceptionTests).
        .target(name: "CCxxOrders", path: "Sources/CCxxOrders"),
        .executableTarget(
            name: "cxx-interop-crasher",
            dependencies: ["CCxxOrders", "CrashCapture"],
            swiftSettings: [.interoperabilityMode(.Cxx)]
        ),
        // The smallest adopter (capture and nothing else): what linking capture loads is tested on it.
        .executableTarget(name: "capture-only", dependencies: ["CrashCapture"]),
        // The guarded heap: the C library's allocation functions replaced, sampled allocations in
        // CShims' pool (heap/). A C target: nothing to call, linking it is the switch.
        .target(name: "CrashCaptureGuardedHeap", dependencies: ["CShims"]),
        // Memory errors in C and through UnsafeMutablePointer, under the guarded heap: what its
        // records say is tested on them. No test target depends on it (that would put the
        // replaced malloc in the test process); the tests run it as a child.
        .target(name: "CGuardedHeapScenarios", path: "Sources/CGuardedHeapScenarios"),
        .executableTarget(name: "guarded-heap-crasher", dependencies: ["CrashCapture", "CrashCaptureGuardedHeap", "CGuardedHeapScenarios", "CCrashScenarios"]),
        // The smallest Sentry-only adopter (CrashReporter and nothing else): that it links neither
        // the analytics' store nor SQLite is tested on it.
        .executableTarget(name: "sentry-only", dependencies: ["CrashReporter"]),

        // MARK: - Server integrations (traits): empty modules unless their trait is enabled

        // Each middleware attaches a CrashContext per request.
        .target(
            name: "CrashCaptureHummingbird",
            dependencies: [
                "CrashCapture", "CrashCaptureTracing",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Hummingbird"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Hummingbird"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Hummingbird"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Hummingbird"])),
                // Hummingbird's own: the server's graceful shutdown, heard inside each request.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Hummingbird"])),
            ]
        ),
        .target(
            name: "CrashCaptureVapor",
            dependencies: [
                "CrashCapture", "CrashCaptureTracing",
                .target(name: "CrashReporter", condition: .when(traits: ["Vapor"])),
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
            ]
        ),
        // What both middlewares ask of swift-distributed-tracing: the span a tracer made current, as a traceparent.
        .target(
            name: "CrashCaptureTracing",
            dependencies: [
                .product(name: "Instrumentation", package: "swift-distributed-tracing", condition: .when(traits: ["Hummingbird", "Vapor", "GRPC"])),
            ]
        ),
        .target(
            name: "CrashCaptureGRPC",
            dependencies: [
                "CrashCapture", "CrashCaptureTracing",
                .product(name: "GRPCCore", package: "grpc-swift-2", condition: .when(traits: ["GRPC"])),
            ]
        ),
        // Capture, or the whole reporter, as a Service of a ServiceGroup: no web framework.
        .target(
            name: "CrashCaptureServiceLifecycle",
            dependencies: [
                "CrashCapture",
                .target(name: "CrashReporter", condition: .when(traits: ["ServiceLifecycle"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["ServiceLifecycle"])),
            ]
        ),

        // MARK: - Fuzzing and benchmarks

        // The record parser's libFuzzer target (corpus in Fuzz/corpus). A target here rather than a
        // package of its own: the modules it fuzzes are package-internal. scripts/fuzz.sh builds it
        // with -sanitize=fuzzer -DRECORD_FUZZER; any other build makes a replayer of the files
        // given as arguments, so every `swift build` compiles it.
        .executableTarget(
            name: "record-fuzzer",
            dependencies: ["CrashRecordFormat", "CrashInspection", "CrashMinidump", "CrashSentry", "CrashSymbolication", "SensorsEvents", "HostFacts"],
            path: "Fuzz/record-fuzzer"
        ),
        // The benchmarks over this package's internal modules (scripts/bench.sh runs them in
        // release builds; the ordo-one ones are Benchmarks/CaptureBench, a package of its own):
        // crash-to-exit times crash-target's deaths with ProcessSpawning and reads the async chains
        // of its records; symbolication-bench times Symbolicator and the Sentry event's local names. Small: a plain build compiles them.
        .executableTarget(
            name: "crash-target",
            dependencies: ["CrashCapture"],
            path: "Benchmarks/InPackage/crash-target"
        ),
        .executableTarget(
            name: "crash-to-exit",
            dependencies: ["CrashRecordFormat", "ProcessSpawning"],
            path: "Benchmarks/InPackage/crash-to-exit"
        ),
        // tracking-bench: the tracking store's throughput, upload and ingest against a loopback
        // server (it opens trackers and stores directly, which only this package may).
        .executableTarget(
            name: "tracking-bench",
            dependencies: ["SensorsTracking", "CrashReporter", "SensorsAnalytics", "CrashCapture", "SensorsEvents"],
            path: "Benchmarks/InPackage/tracking-bench"
        ),
        .executableTarget(
            name: "symbolication-bench",
            dependencies: ["CrashRecordFormat", "CrashSymbolication", "CrashSentry"],
            path: "Benchmarks/InPackage/symbolication-bench"
        ),

        // MARK: - Tests

        // Test support shared by every test target: built tool paths, scratch directories, the
        // harness run as a child, the one loopback HTTP server and the /sa bodies it receives; for
        // the reporter's and the sinks' tests, a recording sink and the Sentry sink on that server.
        .target(name: "TestSupport", dependencies: ["ProcessSpawning", "SensorsEvents", "CrashRecordFormat", "HostFacts", "RecordDelivery",
                                                    "CrashReporterSentry", "HTTPExchange"]),
        .testTarget(name: "CrashRecordFormatTests", dependencies: ["CrashRecordFormat", "CCrashRecordLayout", "TestSupport"]),
        .testTarget(
            name: "CrashCaptureTests",
            dependencies: [
                "CrashCapture", "CrashRecordFormat", "SensorsEvents", "HostFacts", "CShims", "CrashScenarios", "CrashSymbolication", "CrashSentry", "ProcessSpawning",
                "TestSupport", "crash-harness", "capture-only", "cxx-interop-crasher", "crash-inspect", "CrashInspection",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The reporter's launch, inbox, ledger and crash-time upload, with a recording sink where a
        // second sink is needed: it links neither the analytics nor SQLite.
        .testTarget(
            name: "CrashReporterTests",
            dependencies: [
                "CrashReporter", "RecordDelivery", "CrashReporterSentry", "CrashReporterOTLP", "CrashOTLP", "CrashCapture", "HostFacts",
                "CrashRecordFormat", "CrashSentry", "ProcessSpawning", "TestSupport",
                "crash-harness", "crash-uploader", "sentry-only", "crash-inspect",
            ]
        ),
        // The Sentry sink against a loopback Sentry: order, retries, rate limits, sessions, what
        // leaves; checked with Sentry's own code (sentry_sdk, Relay in .venv-oracles).
        .testTarget(
            name: "CrashReporterSentryTests",
            dependencies: ["CrashReporterSentry", "CrashReporter", "CrashSentry", "CrashRecordFormat", "HostFacts", "ProcessSpawning", "TestSupport",
                           "crash-harness"]
        ),
        // The OTLP sink and log record against a real collector endpoint and opentelemetry-proto.
        .testTarget(
            name: "CrashOTLPTests",
            dependencies: ["CrashReporter", "CrashReporterOTLP", "RecordDelivery", "CrashOTLP", "CrashRecordFormat", "CrashScenarios", "HostFacts",
                           "ProcessSpawning", "TestSupport", "crash-harness"]
        ),
        // The analytics as a sink: records and runs as events in a real store.
        .testTarget(
            name: "SensorsAnalyticsTests",
            dependencies: ["SensorsAnalytics", "CrashReporter", "RecordDelivery", "CrashCapture", "SensorsEvents", "SensorsTracking", "CrashInspection",
                           "CrashRecordFormat", "CrashScenarios", "CrashSentry", "CrashSymbolication", "HostFacts", "ProcessSpawning", "TestSupport", "crash-harness", "sensors-store"]
        ),
        .testTarget(
            name: "SensorsTrackingTests",
            dependencies: ["SensorsTracking", "SensorsEvents", "HostFacts", "TestSupport", "crash-harness"],
            exclude: ["Fixtures"] // read by path: a store file the GRDB-based store wrote
        ),
        .testTarget(name: "SensorsEventsTests", dependencies: ["SensorsEvents", "HostFacts", "TestSupport"]),
        .testTarget(name: "ProcessSpawningTests", dependencies: ["ProcessSpawning", "TestSupport"]),
        .testTarget(name: "HTTPExchangeTests", dependencies: ["HTTPExchange", "ProcessSpawning", "TestSupport", "crash-harness"]),
        // The symbol-store and symbolic-oracle tests drive the built crash-inspect on crashes of the harness.
        .testTarget(
            name: "CrashSymbolicationTests",
            dependencies: ["CrashSymbolication", "CrashRecordFormat", "ProcessSpawning", "TestSupport", "crash-inspect", "crash-harness"]
        ),
        .testTarget(
            name: "CrashScenariosTests",
            dependencies: ["CrashScenarios", "CrashCapture", "ProcessSpawning", "TestSupport", "crash-harness"]
        ),
        .testTarget(
            name: "CrashInspectTests",
            dependencies: ["CrashInspection", "CrashSentry", "CrashRecordFormat", "CrashSymbolication", "ProcessSpawning", "TestSupport", "crash-inspect", "crash-harness"],
            exclude: ["Fixtures"] // read by path: the expected help texts
        ),
        // The envelope against Sentry's own code (sentry_sdk, sentry_relay, symbolic in .venv-oracles).
        .testTarget(
            name: "CrashSentryTests",
            dependencies: ["CrashSentry", "SensorsEvents", "CrashRecordFormat", "CrashScenarios", "CrashSymbolication", "ProcessSpawning", "TestSupport", "crash-harness"]
        ),
        // The minidump export read back by tools no one here wrote: lldb-16 and PyPI's minidump parser.
        .testTarget(
            name: "CrashMinidumpTests",
            dependencies: ["CrashMinidump", "CrashRecordFormat", "CrashReporter", "CrashReporterSentry", "CrashSentry", "CrashSymbolication", "ProcessSpawning", "TestSupport",
                           "crash-inspect", "crash-harness"]
        ),
    ]
)

// Every C target (one whose sources are .c files) compiles with -Wall -Wextra, and builds with no
// warning: scripts/c-checks.sh fails on one. Found here rather than listed, so a new C target
// gets the flags too. enableWarning (PackageDescription 6.2) rather than unsafeFlags: a package
// that uses unsafe flags cannot be depended on by version.
for target in package.targets where target.type == .regular || target.type == .executable {
    let directory = Context.packageDirectory + "/" + (target.path ?? "Sources/\(target.name)")
    let files = FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? []
    guard files.contains(where: { $0.hasSuffix(".c") }) else { continue }
    target.cSettings = (target.cSettings ?? []) + [.enableWarning("all"), .enableWarning("extra")]
}

// Every Swift target builds with no warning: a warning is an error (a new one fails the build,
// as -Wextra's do for C). treatAllWarnings (PackageDescription 6.2) applies to this package's
// own targets only, never to its dependencies.
for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .treatAllWarnings(as: .error),
        // As swift-log sets them: every existential spelled `any`, a member used only where its
        // module is imported, imports internal unless marked `package import` or `public import`.
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ]
}
