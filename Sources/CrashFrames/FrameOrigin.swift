// FrameOrigin.swift — whose code a frame is: the program's own, a package it links (SwiftNIO,
// Hummingbird, Vapor…), or the system (the Swift runtime and standard library, Foundation,
// Dispatch, the C library, the loader). What `show` folds, what Sentry's `in_app` says, and what
// a crash with no frame of the program's own code is grouped by.
//
// A SwiftPM executable links its packages statically: the image alone cannot tell the program's
// code from NIO's. The mangled name can: a Swift symbol starts with its module's name. The module
// names of the packages servers link are listed here (the list only decides what is folded and
// marked, never what is recorded); any other module of the main executable is the program's own.
package import CrashRecordFormat

/// Whose code a frame is (see the file comment).
package enum FrameOrigin: Sendable, Equatable, Hashable {
    /// The program's own code: the main executable, outside the packages and the runtime it links.
    case app
    /// A package the program links, by its module (`NIOPosix`) or library (`libsqlite3`).
    case dependency(String)
    /// The Swift runtime and standard library, Foundation, Dispatch, the C and C++ libraries, the loader.
    case system(String)

    package var isApp: Bool { self == .app }

    /// The name a folded run of frames is listed by: the module or library ("" for the app).
    package var name: String {
        switch self {
        case .app: ""
        case .dependency(let name), .system(let name): name
        }
    }

    /// The origin of a frame in the image at `imagePath` (nil: in no image), the main executable
    /// or not, in the function `mangledName` (as the symbol table has it; nil: not known).
    package static func of(imagePath: String?, inMainExecutable: Bool, mangledName: String?) -> FrameOrigin {
        guard let imagePath else { return .system("?") }
        let file = imagePath.split(separator: "/").last.map(String.init) ?? imagePath
        if !inMainExecutable {
            // A shared library: by where it lies and its name.
            if let system = systemLibrary(path: imagePath, file: file) { return .system(system) }
            if let module = mangledName.flatMap(SwiftSymbol.module(ofMangled:)), let known = known(module: module) { return known }
            return .dependency(libraryName(file))
        }
        guard let mangledName, !mangledName.isEmpty else { return .app }
        if let module = SwiftSymbol.module(ofMangled: mangledName) { return known(module: module) ?? .app }
        // A Swift symbol that starts with no module: a generic thunk or a C type's witness, compiler glue.
        if mangledName.hasPrefix("$s") || mangledName.hasPrefix("_$s") { return .system("Swift") }
        return cSymbol(mangledName) ?? .app
    }

    /// The module's origin when it is the system's or a known package's; nil for the app's own.
    static func known(module: String) -> FrameOrigin? {
        if systemModules.contains(module) || module.hasPrefix("_Swift") || module.hasPrefix("Foundation") {
            return .system(module.hasPrefix("Foundation") || module.hasPrefix("_Foundation") ? "Foundation" : module == "Dispatch" ? "Dispatch" : "Swift")
        }
        if dependencyModules.contains(module) || dependencyPrefixes.contains(where: module.hasPrefix) { return .dependency(module) }
        return nil
    }

    /// The Swift runtime's and toolchain's own modules.
    static let systemModules: Set<String> = [
        "Swift", "_Concurrency", "_StringProcessing", "_RegexParser", "_Differentiation", "Synchronization", "Distributed",
        "Observation", "Dispatch", "Glibc", "SwiftGlibc", "Musl", "CoreFoundation", "_FoundationCShims", "_FoundationCollections",
        "FoundationEssentials", "FoundationInternationalization", "FoundationNetworking", "FoundationXML", "XCTest", "Testing",
        "_Testing_Foundation", "RegexBuilder", "Cxx", "CxxStdlib", "__C",
    ]

    /// Packages' modules, by exact name: those of CrashCapture itself and of the packages server
    /// programs link most.
    static let dependencyModules: Set<String> = [
        "CrashCapture", "CrashReporter", "CrashReporterSentry", "CrashReporterOTLP", "RecordDelivery", "CrashRecordFormat",
        "HostFacts", "HTTPExchange", "CrashFrames", "CrashSentry", "CrashOTLP", "CrashMinidump", "CrashSymbolication",
        "CrashCaptureHummingbird", "CrashCaptureVapor", "CrashCaptureGRPC", "CrashCaptureServiceLifecycle", "CrashCaptureTracing",
        "SensorsAnalytics", "SensorsEvents", "SensorsTracking",
        "Logging", "Metrics", "CoreMetrics", "Tracing", "Instrumentation", "ServiceContextModule", "ServiceLifecycle",
        "UnixSignals", "AsyncHTTPClient", "Crypto", "_CryptoExtras", "CryptoBoringWrapper", "X509", "SwiftASN1",
        "_CertificateInternals", "RoutingKit", "ConsoleKit", "ConsoleKitCommands", "ConsoleKitTerminal", "AsyncKit",
        "MultipartKit", "WebSocketKit", "SQLKit", "SQLiteKit", "SQLiteNIO", "PostgresKit", "PostgresNIO", "MySQLNIO", "MySQLKit",
        "GRDB", "AsyncAlgorithms", "Algorithms", "DequeModule", "OrderedCollections", "Collections", "HashTreeCollections",
        "BitCollections", "HeapModule", "_RopeModule", "InternalCollectionsUtilities", "Atomics", "ArgumentParser",
        "ArgumentParserToolInfo", "SystemPackage", "HTTPTypes", "HTTPTypesFoundation", "SwiftProtobuf", "Mustache",
        "ExtrasBase64", "CompressNIO", "Leaf", "LeafKit", "JWT", "JWTKit", "Configuration", "W3CTraceContext", "Prometheus",
        "OpenAPIRuntime", "OpenAPIKit", "Yams", "Subprocess", "RealModule", "ComplexModule", "Numerics", "BigInt",
        "StructuredFieldValues", "RawStructuredFieldValues", "SwiftOTel", "OTel", "OTLPGRPC", "OTLPCore",
    ]

    /// Families of packages' modules, by the start of their names.
    static let dependencyPrefixes = ["NIO", "_NIO", "CNIO", "Hummingbird", "Vapor", "XCTVapor", "GRPC", "Fluent", "_Atomics",
                                     "CCrypto", "CSQLite", "WebSocket", "SwiftSyntax", "OTel", "Smithy", "Soto"]

    /// A C or C++ function of the main executable that is not the program's own: the Swift
    /// runtime's, a package's C part, the C library's statically linked parts; nil: the program's.
    static func cSymbol(_ name: String) -> FrameOrigin? {
        if name.hasPrefix("swift_") || name.hasPrefix("_swift") || name.hasPrefix("__swift") || name.hasPrefix("_ZN5swift") { return .system("Swift") }
        if name.hasPrefix("c_nio_") || name.hasPrefix("CNIO") { return .dependency("NIO") }
        if name.hasPrefix("CCryptoBoringSSL") { return .dependency("Crypto") }
        if name.hasPrefix("cc_") || name.hasPrefix("cc__") { return .dependency("CrashCapture") }
        if name.hasPrefix("sqlite3") { return .dependency("SQLite") }
        if name.hasPrefix("_ZNSt") || name.hasPrefix("_ZSt") || name.hasPrefix("_ZNKSt") || name.hasPrefix("__cxa") || name.hasPrefix("__gxx") {
            return .system("libstdc++")
        }
        if name.hasPrefix("__") || name == "_start" || name.hasPrefix("_dl_") { return .system("libc") }
        return nil
    }

    /// The system's shared libraries: the C library, the loader, the Swift runtime and toolchain.
    static func systemLibrary(path: String, file: String) -> String? {
        if file.hasPrefix("libswift") { return "Swift" }
        if file.hasPrefix("libFoundation") || file.hasPrefix("lib_Foundation") { return "Foundation" }
        if file.hasPrefix("libdispatch") || file.hasPrefix("libBlocksRuntime") { return "Dispatch" }
        if file.hasPrefix("libXCTest") || file.hasPrefix("libTesting") { return "XCTest" }
        if path.hasPrefix("[") { return file }   // [vdso]
        let systemDirectory = path.hasPrefix("/lib/") || path.hasPrefix("/lib64/") || path.hasPrefix("/usr/lib/")
            || path.hasPrefix("/usr/lib64/") || path.hasPrefix("/usr/libexec/") || path.contains("/usr/lib/swift/")
        guard systemDirectory else { return nil }
        if file.hasPrefix("ld-linux") || file.hasPrefix("ld-musl") { return "the loader" }
        return libraryName(file)
    }

    /// `libc.so.6` is `libc`.
    static func libraryName(_ file: String) -> String {
        file.firstRange(of: ".so").map { String(file[..<$0.lowerBound]) } ?? file
    }
}

extension CrashRecord {
    /// ``FrameOrigin`` of the frame at `address` in the function `mangledName`.
    package func origin(ofFrameAt address: UInt64, mangledName: String?) -> FrameOrigin {
        let image = self.image(containing: address)
        return FrameOrigin.of(imagePath: image?.path, inMainExecutable: image?.isMainExecutable ?? false, mangledName: mangledName)
    }
}

/// What a Swift symbol's mangled name says without demangling it.
package enum SwiftSymbol {
    /// The module a mangled Swift symbol belongs to (`$s14crashing_server…` is `crashing_server`,
    /// `$sSS…` and `$ss…` are `Swift`, `$sSc…` is `_Concurrency`); nil for a name that is not a
    /// Swift symbol, or whose module cannot be read without demangling.
    package static func module(ofMangled name: String) -> String? {
        var bytes = Substring(name).utf8[...]
        for prefix in ["_$s", "$s", "$S", "_T0"] where name.hasPrefix(prefix) {
            bytes = bytes.dropFirst(prefix.utf8.count)
            guard let first = bytes.first else { return nil }
            switch first {
            case UInt8(ascii: "s"): return "Swift"
            case UInt8(ascii: "S"):
                // A standard substitution: Sc… is a _Concurrency type, So/SC a C type, the rest Swift's.
                let second = bytes.dropFirst().first
                return second == UInt8(ascii: "c") ? "_Concurrency" : second == UInt8(ascii: "o") || second == UInt8(ascii: "C") ? nil : "Swift"
            case UInt8(ascii: "1") ... UInt8(ascii: "9"):
                var length = 0
                while let digit = bytes.first, digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9"), length < 10_000 {
                    length = length * 10 + Int(digit - UInt8(ascii: "0"))
                    bytes = bytes.dropFirst()
                }
                guard length > 0, bytes.count >= length else { return nil }
                return String(decoding: bytes.prefix(length), as: UTF8.self)
            default: return nil
            }
        }
        return nil
    }
}
