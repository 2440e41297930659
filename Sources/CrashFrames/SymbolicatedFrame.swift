// SymbolicatedFrame.swift — one source-level frame (what a frame's address became, by the image's
// own symbol table, ImageSymbols, or by llvm-symbolizer, CrashSymbolication's Symbolicator), and the
// Swift runtime's demangler that both use.
#if canImport(Glibc)
import Glibc
#endif

/// One source-level frame. An address that hit inlined code yields several, innermost first;
/// all but the last have `inlined == true`.
package struct SymbolicatedFrame: Sendable, Equatable {
    /// The address as recorded.
    package var address: UInt64
    /// Path of the image the address falls in, if any.
    package var image: String?
    /// The address relative to the image's load bias (what `llvm-symbolizer --obj` takes).
    package var imageOffset: UInt64?
    /// Demangled function name, or nil when unknown.
    package var symbol: String?
    /// The function's name as the symbolizer gave it (mangled for Swift), or nil when unknown.
    package var mangledSymbol: String?
    package var file: String?
    package var line: Int?
    package var column: Int?
    /// True for a frame that was inlined into the one after it.
    package var inlined: Bool
    /// Why no symbol is shown, when none is (e.g. "build-id differs").
    package var problem: String?
    /// The function's first instruction in the process, where the image's symbol table said it.
    package var functionStart: UInt64?

    package init(address: UInt64, image: String? = nil, imageOffset: UInt64? = nil, symbol: String? = nil,
                file: String? = nil, line: Int? = nil, column: Int? = nil, inlined: Bool = false, problem: String? = nil,
                mangledSymbol: String? = nil, functionStart: UInt64? = nil) {
        self.functionStart = functionStart
        self.address = address
        self.image = image
        self.imageOffset = imageOffset
        self.symbol = symbol
        self.mangledSymbol = mangledSymbol
        self.file = file
        self.line = line
        self.column = column
        self.inlined = inlined
        self.problem = problem
    }
}

/// Swift symbol names, demangled in process with the runtime's own demangler.
///
/// The toolchain's llvm-symbolizer demangles C++ but leaves Swift names mangled; libswiftCore
/// exports `swift_demangle`, the same demangler `swift demangle` uses.
package enum SwiftDemangler {
    @_silgen_name("swift_demangle")
    private static func swift_demangle(
        _ mangledName: UnsafePointer<CChar>?, _ mangledNameLength: Int,
        _ outputBuffer: UnsafeMutablePointer<CChar>?, _ outputBufferSize: UnsafeMutablePointer<Int>?,
        _ flags: UInt32
    ) -> UnsafeMutablePointer<CChar>?

    @_silgen_name("_swift_backtrace_demangle")
    private static func swift_backtrace_demangle(
        _ mangledName: UnsafePointer<CChar>?, _ mangledNameLength: Int,
        _ outputBuffer: UnsafeMutablePointer<CChar>?, _ outputBufferSize: UnsafeMutablePointer<Int>?,
        _ status: UnsafeMutablePointer<Int32>?
    ) -> UnsafeMutablePointer<CChar>?

    /// The short form Swift's backtracer prints (its `demangle` setting: the runtime's simplified
    /// options — no module names, no argument types, thunks and partial applies shortened), for a
    /// Swift or C++ symbol; anything else comes back unchanged. `closure #1 (Request) async throws
    /// -> Response in static Routes.serve(_:context:)` of the full form is `closure #1 in
    /// static Routes.serve(_:context:)`. The runtime's backtracing entry point (libswiftCore
    /// exports it, shared and static alike); the status argument that newer runtimes take is
    /// passed, and ignored by older ones.
    package static func simplified(_ name: String) -> String {
        guard name.hasPrefix("$s") || name.hasPrefix("_$s") || name.hasPrefix("$S") || name.hasPrefix("_T0") || name.hasPrefix("_Z") else { return name }
        return name.withCString { pointer -> String in
            var status: Int32 = 0
            guard let result = swift_backtrace_demangle(pointer, strlen(pointer), nil, nil, &status) else { return demangle(name) }
            defer { free(result) }
            let text = String(cString: result)
            return text.isEmpty ? demangle(name) : text
        }
    }

    /// The demangled form of a Swift symbol; anything else comes back unchanged.
    package static func demangle(_ name: String) -> String {
        guard name.hasPrefix("$s") || name.hasPrefix("_$s") || name.hasPrefix("$S") || name.hasPrefix("_T0") else { return name }
        return name.withCString { pointer -> String in
            guard let result = swift_demangle(pointer, strlen(pointer), nil, nil, 0) else { return name }
            defer { free(result) }
            return String(cString: result)
        }
    }
}
