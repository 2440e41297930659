// CxxException.swift — an uncaught C++ exception, as the record says it (CC_STR_CXX_*): the one
// place its type is demangled and it is worded, for crash-inspect, the summary and the sinks.
#if canImport(Glibc)
import Glibc
#endif

/// The C++ exception that reached std::terminate on the crashed thread before it aborted.
package struct CxxException: Sendable, Equatable {
    /// How its what() went.
    package enum What: Sendable, Equatable {
        /// Not a `std::exception`: it has no what().
        case notStdException
        /// what() gave this text (at most 1024 bytes).
        case text(String)
        /// what() threw (it is noexcept: the runtime terminated again).
        case threw
        /// std::terminate was called with no exception in flight.
        case noException
        /// No terminate handler ran: the exception was found thrown and not caught on the crashed
        /// thread's stack (Swift's C++ interoperability on Linux stops it at the first Swift frame
        /// with a fatal error). Its what() is code, never called at a crash: not read.
        case inFlight
    }

    /// The type's mangled name, as `type_info::name()` gives it ("St13runtime_error"); nil with no exception.
    package var mangledType: String?
    package var what: What

    package init(mangledType: String?, what: What) {
        self.mangledType = mangledType
        self.what = what
    }

    /// The type as C++ spells it ("std::runtime_error"), demangled by the C++ runtime this
    /// process has (libstdc++'s `__cxa_demangle`, which every Swift program on Linux loads);
    /// the mangled name when it cannot be demangled.
    package var type: String? {
        guard let mangled = mangledType else { return nil }
        return Self.demangle(mangled) ?? mangled
    }

    /// The text: what() when it gave one.
    package var message: String? {
        if case .text(let text) = what { return text }
        return nil
    }

    /// One line: "uncaught C++ exception std::runtime_error: the order could not be priced".
    package var summary: String {
        switch what {
        case .noException: return "std::terminate called with no C++ exception in flight"
        case .text(let text): return "uncaught C++ exception \(type ?? "?"): \(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")"
        case .threw: return "uncaught C++ exception \(type ?? "?") (its what() threw)"
        case .notStdException: return "uncaught C++ exception \(type ?? "?") (not a std::exception: no what())"
        case .inFlight: return "uncaught C++ exception \(type ?? "?") (it never reached std::terminate: what() not read)"
        }
    }

    private typealias Demangle = @convention(c) (UnsafePointer<CChar>, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?,
                                                 UnsafeMutablePointer<Int32>) -> UnsafeMutablePointer<CChar>?
    private static let demangler: Demangle? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__cxa_demangle") else { return nil }
        return unsafeBitCast(symbol, to: Demangle.self)
    }()

    /// `mangled` (a type's encoding, or a `_Z` name) as C++ spells it; nil when it is none.
    package static func demangle(_ mangled: String) -> String? {
        guard let demangler, mangled.utf8.count < 4096 else { return nil }
        var status: Int32 = 0
        guard let result = demangler(mangled, nil, nil, &status), status == 0 else { return nil }
        defer { free(result) }
        return String(cString: result)
    }
}
