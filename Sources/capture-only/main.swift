// capture-only — the smallest adopter of CrashCapture: it imports nothing else, starts capture
// and prints one line. CaptureFootprintTests checks what linking it loads (no Foundation) and
// that its crash is still recorded; scripts/bench.sh's launch table measures the same shape.
//
//   capture-only DIR          starts CrashCapture writing to DIR, prints "started: <result>"
//   capture-only DIR crash    the same, then dies of SIGSEGV (a null write)
import CrashCapture
#if canImport(Glibc)
import Glibc
#endif

@inline(never) func opaque<T>(_ value: T) -> T { value }

/// One line to stdout, unbuffered (a crash follows it).
func say(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { _ = write(1, $0.baseAddress, $0.count) }
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    say("usage: capture-only DIR [crash]")
    exit(64)
}
do {
    let result = try CrashHandler.start(.init(directory: arguments[1], appName: "capture-only", appVersion: "1.0"))
    say("started: \(result)")
} catch {
    say("not started: \(error)")
    exit(1)
}
if arguments.count > 2 && arguments[2] == "crash" {
    UnsafeMutablePointer<Int>(bitPattern: opaque(8))!.pointee = 1
}
