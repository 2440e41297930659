// GuardedHeapTests.swift — memory errors under the guarded heap (product CrashCaptureGuardedHeap),
// each in a child (`guarded-heap-crasher`, which links it; no test process does), with every
// allocation sampled (CRASHCAPTURE_GUARDED_HEAP=1:<slots>): a use after free (read and write), an
// overflow, an underflow, a double free and a free of a pointer no allocation starts at, written
// in C and through UnsafeMutablePointer. Each dies of the signal it would die of without capture
// (the same program under CRASHCAPTURE_DISABLE=1), and `crash-inspect show --json` names the
// error, the allocation's size, the access's offset and the functions that allocated and freed.
// With the heap off, the use after free goes unnoticed: what the guarded heap is for.
import CrashCapture
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class GuardedHeapTests: XCTestCase {
    var crasher: String { BuiltProducts.directory + "/guarded-heap-crasher" }

    /// What one scenario's run left: how it ended, and its record as `show --json` reads it.
    struct Outcome {
        var ending: ChildProcess.Ending
        var stdout: String
        var heap: [String: Any]?
        var summary: String?
        var shown: String?
        /// The Sentry event `crash-inspect export --sentry` makes of the record.
        var sentryEvent: [String: Any]?
    }

    func run(_ language: String, _ scenario: String, heap: String? = "1:4096", capture: Bool = true,
             startFromMain: Bool = false, refuseMemoryReads: Bool = false) throws -> Outcome {
        let directory = try Scratch.directory("guarded-heap-\(language)-\(scenario)")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment.removeValue(forKey: "CRASHCAPTURE_GUARDED_HEAP")
        if let heap { environment["CRASHCAPTURE_GUARDED_HEAP"] = heap }
        if startFromMain { environment["GUARDED_HEAP_CRASHER_START"] = "1" }
        if refuseMemoryReads { environment["GUARDED_HEAP_CRASHER_REFUSE_MEMORY_READS"] = "1" }
        environment.removeValue(forKey: CrashHandler.disableEnvironmentVariable)
        if !capture { environment[CrashHandler.disableEnvironmentVariable] = "1" }
        let child = try ChildProcess.run(crasher, [directory, language, scenario], environment: environment,
                                         stdout: directory + "/stdout", stderr: directory + "/stderr", timeout: 60)
        var outcome = Outcome(ending: child.ending, stdout: (try? String(contentsOfFile: directory + "/stdout", encoding: .utf8)) ?? "")
        let records = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".ccrec") }
        if let record = records.first {
            let json = try Tools.output(BuiltProducts.inspect, ["show", directory + "/" + record, "--json"])
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            outcome.heap = object["guardedHeap"] as? [String: Any]
            outcome.summary = object["summary"] as? String
            outcome.shown = try Tools.output(BuiltProducts.inspect, ["show", directory + "/" + record])
            _ = try Tools.output(BuiltProducts.inspect, ["export", directory + "/" + record, "--sentry", "-o", directory + "/event.envelope"])
            // The envelope's third line is the event's item.
            let lines = try String(contentsOfFile: directory + "/event.envelope", encoding: .isoLatin1).split(separator: "\n", omittingEmptySubsequences: false)
            if lines.count > 2 { outcome.sentryEvent = try JSONSerialization.jsonObject(with: Data(lines[2].utf8)) as? [String: Any] }
        }
        return outcome
    }

    /// The names of a stack `show --json` gives.
    func names(_ heap: [String: Any], _ key: String) -> [String] {
        ((heap[key] as? [[String: Any]]) ?? []).compactMap { $0["symbol"] as? String }
    }

    func check(_ language: String, _ scenario: String, signal: Int32, error: String, offset: Int, freed: Bool) throws {
        let label = "\(language) \(scenario)"
        let outcome = try run(language, scenario)
        XCTAssertEqual(outcome.ending, .signaled(signal), label)
        // The same death without capture: the guarded heap's fault or abort, not the handler's doing.
        XCTAssertEqual(try run(language, scenario, capture: false).ending, .signaled(signal), "\(label) under CRASHCAPTURE_DISABLE=1")
        let heap = try XCTUnwrap(outcome.heap, "\(label): no guardedHeap in the record")
        XCTAssertEqual(heap["error"] as? String, error, label)
        XCTAssertEqual(heap["allocationSize"] as? Int, 48, label)
        XCTAssertEqual(heap["offset"] as? Int, offset, label)
        let allocatedBy = language == "c" ? "gh_allocate_in_c" : "allocateInSwift"
        let freedBy = language == "c" ? "gh_free_in_c" : "freeInSwift"
        let allocation = names(heap, "allocationStack")
        XCTAssertTrue(allocation.first { !$0.contains("malloc") && !$0.contains("memalign") && !$0.contains("swift_slowAlloc") }?
            .contains(allocatedBy) == true, "\(label): allocated by \(allocation)")
        if freed {
            let free = names(heap, "freeStack")
            XCTAssertTrue(free.first?.contains(freedBy) == true, "\(label): freed by \(free)")
            XCTAssertNotNil(heap["freeThread"] as? Int, label)
        } else {
            XCTAssertTrue(heap["freeThread"] is NSNull, label)
        }
        // The one summary every view shares names it; show prints the two stacks first.
        XCTAssertTrue(outcome.summary?.contains("\(error) of a 48-byte allocation") == true, "\(label): \(outcome.summary ?? "no summary")")
        XCTAssertTrue(outcome.shown?.contains("allocated by thread") == true, label)
    }

    func testAUseAfterFreeFaultsAtOnceAndNamesTheAllocationAndTheFree() throws {
        for language in ["c", "swift"] {
            try check(language, "use-after-free-read", signal: SIGSEGV, error: "heap-use-after-free", offset: 24, freed: true)
            try check(language, "use-after-free-write", signal: SIGSEGV, error: "heap-use-after-free", offset: 0, freed: true)
        }
    }

    func testAnOverflowAndAnUnderflowFaultAtTheFirstByteOutside() throws {
        for language in ["c", "swift"] {
            try check(language, "overflow", signal: SIGSEGV, error: "heap-buffer-overflow", offset: 48, freed: false)
            try check(language, "underflow", signal: SIGSEGV, error: "heap-buffer-underflow", offset: -1, freed: false)
        }
    }

    func testADoubleAndAnInvalidFreeAbortAsGlibcWouldAndSaySo() throws {
        for language in ["c", "swift"] {
            try check(language, "double-free", signal: SIGABRT, error: "double-free", offset: 0, freed: true)
            try check(language, "invalid-free", signal: SIGABRT, error: "invalid-free", offset: 8, freed: false)
        }
    }

    /// A child forked while sampled allocations live allocates and frees under the same pool and
    /// exits 0; the parent's use after free still faults and is named. More live allocations than
    /// slots: the rest come from glibc and every one works.
    func testForkAndAFullPoolKeepWorking() throws {
        let forked = try run("c", "fork")
        XCTAssertEqual(forked.ending, .signaled(SIGSEGV))
        XCTAssertEqual(forked.heap?["error"] as? String, "heap-use-after-free")
        let full = try run("c", "exhaust", heap: "1:16")
        XCTAssertEqual(full.ending, .exited(0), full.stdout)
        XCTAssertTrue(full.stdout.hasPrefix("survived: 0"), full.stdout)
        XCTAssertNil(full.heap)
    }

    /// Where a sandbox refuses process_vm_readv (a seccomp filter here; qemu-user, which runs arm64
    /// containers on x86-64 hosts, lacks it), the stacks are read through a pipe and still name
    /// the allocating and freeing functions.
    func testTheStacksAreReadWhereProcessVmReadvIsRefused() throws {
        let outcome = try run("c", "use-after-free-write", refuseMemoryReads: true)
        XCTAssertEqual(outcome.ending, .signaled(SIGSEGV))
        let heap = try XCTUnwrap(outcome.heap, "no guardedHeap in the record")
        XCTAssertEqual(heap["error"] as? String, "heap-use-after-free")
        XCTAssertEqual(names(heap, "allocationStack").first, "gh_allocate_in_c", "\(names(heap, "allocationStack"))")
        XCTAssertEqual(names(heap, "freeStack").first, "gh_free_in_c", "\(names(heap, "freeStack"))")
    }

    /// Turned on by the program itself (`cc_guarded_malloc_start`), without the variable.
    func testTheProgramCanTurnItOnItself() throws {
        let outcome = try run("swift", "use-after-free-read", heap: nil, startFromMain: true)
        XCTAssertEqual(outcome.ending, .signaled(SIGSEGV))
        XCTAssertEqual(outcome.heap?["error"] as? String, "heap-use-after-free")
    }

    /// Sentry gets the error as AddressSanitizer names it, grouped by where the memory was
    /// allocated and freed (not where the victim faulted), with both stacks beside it.
    func testSentryTitlesAndGroupsTheErrorByItsAllocationAndFreeSites() throws {
        let outcome = try run("c", "use-after-free-write")
        let event = try XCTUnwrap(outcome.sentryEvent)
        let exception = try XCTUnwrap(((event["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first)
        XCTAssertEqual(exception["type"] as? String, "heap-use-after-free")
        XCTAssertEqual(exception["value"] as? String, "a 48-byte allocation, access at offset 0")
        XCTAssertEqual(event["fingerprint"] as? [String], ["guarded-heap", "heap-use-after-free", "gh_allocate_in_c", "gh_free_in_c"])
        XCTAssertEqual((event["tags"] as? [String: Any])?["memory_error"] as? String, "heap-use-after-free")
        let extra = try XCTUnwrap((event["extra"] as? [String: Any])?["guarded_heap"] as? [String: Any])
        XCTAssertEqual(extra["allocation_size"] as? String, "48")
        XCTAssertTrue((extra["free_stack"] as? String)?.hasPrefix("gh_free_in_c") == true, "\(extra)")
    }

    /// Without the guarded heap the same use after free reads freed memory and goes on: glibc's
    /// allocator does not notice, and no record is written.
    func testWithTheHeapOffTheUseAfterFreeGoesUnnoticed() throws {
        let outcome = try run("c", "use-after-free-read", heap: nil)
        XCTAssertEqual(outcome.ending, .exited(0))
        XCTAssertTrue(outcome.stdout.hasPrefix("survived"), outcome.stdout)
        XCTAssertNil(outcome.heap)
    }
}
