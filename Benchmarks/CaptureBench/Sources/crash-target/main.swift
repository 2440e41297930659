// main.swift — crash-target: the program whose crash-to-exit time is measured.
//
//   crash-target none            dies of SIGSEGV with no handler of ours
//   crash-target capture DIR     starts CrashCapture writing to DIR, then dies of SIGSEGV
//   crash-target deep DIR        as capture, under 60 nested calls (a 64-frame record)
// Swift's own backtracer is on or off through SWIFT_BACKTRACE, as for any program.
import CrashCapture
#if canImport(Glibc)
import Glibc
#endif

@inline(never) func opaque<T>(_ value: T) -> T { value }

@inline(never) func crash() {
    let pointer = UnsafeMutablePointer<Int>(bitPattern: opaque(8))!
    pointer.pointee = 1
}

@inline(never) func nest(_ depth: Int) {
    if depth == 0 { crash() } else { nest(depth - 1) }
    _ = opaque(depth)
}

let arguments = CommandLine.arguments
let mode = arguments.count > 1 ? arguments[1] : "none"
if mode != "none" {
    guard arguments.count > 2 else { fputs("usage: crash-target none | capture DIR | deep DIR\n", stderr); exit(64) }
    var before = timespec()
    clock_gettime(CLOCK_MONOTONIC, &before)
    do { try CrashCapture.start(.init(directory: arguments[2], appName: "crash-target", appVersion: "1.0")) } catch {
        fputs("crash-target: \(error)\n", stderr)
        exit(70)
    }
    if getenv("CRASH_TARGET_TIME_START") != nil {
        var after = timespec()
        clock_gettime(CLOCK_MONOTONIC, &after)
        let micros = (after.tv_sec - before.tv_sec) * 1_000_000 + (after.tv_nsec - before.tv_nsec) / 1000
        fputs("start took \(micros) us\n", stderr)
    }
}
if mode == "deep" { nest(60) } else { crash() }
exit(71)
