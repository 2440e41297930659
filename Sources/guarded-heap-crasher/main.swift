// guarded-heap-crasher — memory errors under the guarded heap, each in a process of its own:
// `guarded-heap-crasher <record directory> c|swift <scenario> [size]`. Capture starts first, so
// the error's record says what the guarded heap knew. Scenarios: use-after-free-read,
// use-after-free-write, overflow, underflow, double-free, invalid-free (and in C: fork, exhaust). Run with
// CRASHCAPTURE_GUARDED_HEAP=1:<slots> (every allocation sampled) by the tests;
// GUARDED_HEAP_CRASHER_REFUSE_MEMORY_READS=1 refuses process_vm_readv first (a seccomp filter, as a
// sandbox's), so the heap's stacks and the handler's reads go through their pipes.
import CCrashScenarios
import CGuardedHeapScenarios
import CrashCapture
import CrashCaptureGuardedHeap
#if canImport(Glibc)
import Glibc
#endif

/// A line on stderr (write(2): no stdio stream to share across threads).
func say(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

let arguments = CommandLine.arguments
// `guarded-heap-crasher bench <pairs>`: the cost of a malloc/free pair, through this program's
// allocator and through glibc's own, side by side in one process (Benchmarks/README.md).
if arguments.count == 3, arguments[1] == "bench", let pairs = Int(arguments[2]) {
    for (label, glibc) in [("glibc's own", Int32(1)), ("the program's malloc", Int32(0)), ("glibc's own", Int32(1)), ("the program's malloc", Int32(0))] {
        let ns = gh_bench_pairs(pairs, 48, glibc)
        print(label + ": " + String(Double(ns) / Double(pairs)) + " ns per 48-byte malloc/free pair")
    }
    exit(0)
}
guard arguments.count >= 4 else {
    say("usage: guarded-heap-crasher <record directory> c|swift <scenario> [size]")
    exit(64)
}
let size = arguments.count > 4 ? Int(arguments[4]) ?? 48 : 48
// The program turning the heap on itself (the tests: every allocation, 4096 slots).
if getenv("GUARDED_HEAP_CRASHER_START") != nil, cc_guarded_malloc_start(1, 4096) != 0 {
    say("guarded-heap-crasher: cc_guarded_malloc_start failed")
    exit(4)
}
if getenv("GUARDED_HEAP_CRASHER_REFUSE_MEMORY_READS") != nil { cch_refuse_memory_reads() }
_ = try CrashHandler.start(CrashHandler.Configuration(directory: arguments[1], appName: "guarded-heap-crasher", appVersion: "1"))

/// The allocation the Swift scenarios make: bytes from the allocator (`swift_slowAlloc`, malloc).
@inline(never) func allocateInSwift(_ count: Int) -> UnsafeMutablePointer<UInt8> {
    let p = UnsafeMutablePointer<UInt8>.allocate(capacity: count)
    p.initialize(repeating: 0x61, count: count)
    return p
}

/// Frees what ``allocateInSwift(_:)`` made.
@inline(never) func freeInSwift(_ p: UnsafeMutablePointer<UInt8>) { p.deallocate() }

/// One at its page's start (`left`) or end (see gh_scenarios.c); the others stay allocated.
func allocatePlaced(_ count: Int, left: Bool) -> UnsafeMutablePointer<UInt8> {
    for _ in 0..<64 {
        let p = allocateInSwift(count)
        if (UInt(bitPattern: p) & 4095 == 0) == left { return p }
    }
    say("guarded-heap-crasher: no allocation placed as asked (is the guarded heap on?)")
    exit(3)
}

@inline(never) func runSwift(_ name: String) -> Int32 {
    let p = allocatePlaced(size, left: name == "underflow")
    switch name {
    case "use-after-free-read":
        freeInSwift(p)
        return Int32(p[size / 2])
    case "use-after-free-write":
        freeInSwift(p)
        p[0] = 0x62
    case "overflow":
        for i in 0...(size + 64) { p[i] = 0x63 }
    case "underflow":
        for i in 1...4096 { p[-i] = 0x64 }
    case "double-free":
        freeInSwift(p)
        freeInSwift(p)
    case "invalid-free":
        freeInSwift(p + 8)
    default:
        return -2
    }
    return 0
}

let result = arguments[2] == "c" ? gh_run_c_scenario(arguments[3], size) : runSwift(arguments[3])
// Reached only when the error did not stop the process (the guarded heap off, say).
print("survived: \(result)")
exit(result == -2 ? 64 : 0)
