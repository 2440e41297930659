// LaunchSupport.swift — what every measured program uses: a monotonic clock and a count of the
// shared objects it has loaded. The standard library, Glibc and a few lines of C (no Foundation).
import CLaunchSupport
#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_MONOTONIC in nanoseconds.
@inline(__always)
public func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

/// Microseconds between two ``monotonicNanoseconds()`` readings, with one decimal.
public func microseconds(from start: Int64, to end: Int64) -> String {
    let tenths = (end - start + 50) / 100
    return "\(tenths / 10).\(tenths % 10)"
}

/// Shared objects loaded now, as dl_iterate_phdr lists them, the main program left out (the
/// vDSO and the dynamic loader count, as in `ldd`'s list).
public func loadedSharedObjects() -> Int { Int(launch_loaded_shared_objects()) }
