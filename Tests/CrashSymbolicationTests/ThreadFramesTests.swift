// ThreadFramesTests.swift — the one rule from recorded frames and async context chains to the frames a Swift backtrace shows, on made-up threads; the async-symbol test against Swift's backtracer's names; ELFSymbolTable against nm.
import CrashRecordFormat
import CrashSymbolication
import Foundation
import TestSupport
import XCTest

final class ThreadFramesTests: XCTestCase {
    func testAsyncPartialFunctionsAreToldByTheirMangledSuffixAsSwiftsBacktracerTellsThem() {
        // Names from a real backtracer report of an async chain (debug and release).
        for name in ["$s3dbg6level2yS2iSgYaFTQ1_", "$s3dbg6level3yS2iSgYaFTY1_", "$s3dbgSiyYacfU_TATQ0_",
                     "$sxIeAgHr_xs5Error_pIegHrzo_s8SendableRzs5NeverORs_r0_lTRyt_Tg5TA.59TQ0_", "$s1a1fyyYaFTY12_"] {
            XCTAssertTrue(SwiftAsyncSymbol.isAsyncFunction(mangledName: name), name)
        }
        for name in ["$s3dbg6level2yS2iSgYaF", "$s3dbg6level2yS2iSgYaFTu", "_ZL23completeTaskWithClosurePN5swift12AsyncContextEPNS_10SwiftErrorE",
                     "", "_", "TQ", "$s1a1fyyYaFTX1_", "main", "$s1a1fyyYaFTQ1"] {
            XCTAssertFalse(SwiftAsyncSymbol.isAsyncFunction(mangledName: name), name)
        }
    }

    /// A thread: frames at 0x1000, 0x2000, …; async functions are what `async` holds.
    func resolve(_ thread: CrashThread, async: Set<UInt64>) -> [String] {
        ThreadFrames.resolve(thread) { $0.map { async.contains($0) } }.map { "\($0.kind.rawValue) 0x\(String($0.address, radix: 16))" }
    }

    func chain(_ frame: Int, _ links: [(UInt64, UInt64, UInt64)], source: AsyncContextChain.Source = .framePointer,
               end: AsyncContextChain.End = .parentNull) -> AsyncContextChain {
        AsyncContextChain(frameIndex: frame, source: source, firstContext: links.first?.0 ?? 0,
                          links: links.map { .init(context: $0.0, parent: $0.1, resume: $0.2) }, end: end)
    }

    func testTheFirstAsyncFramesChainFollowsItAndThePhysicalFramesBeyondGo() {
        var thread = CrashThread(tid: 1, crashed: true, framesFromSignalContext: true, frames: [0x1000, 0x2000, 0x3000, 0x4000])
        thread.asyncChains = [chain(0, [(0x70, 0x80, 0x9990)], end: .notCode),            // garbage at a frame that is not async
                              chain(1, [(0x100, 0x200, 0xA000), (0x200, 0, 0xB000)]),
                              chain(2, [(0x300, 0, 0xC000)])]
        // Frame 1 (looked up at 0x1fff) is async; so is one of its resume points.
        XCTAssertEqual(resolve(thread, async: [0x1fff, 0xA000]),
                       ["programCounter 0x1000", "returnAddress 0x2000", "asyncResumePoint 0xa000", "asyncResumePoint 0xb000"])
        // Without an async frame, or without chains, the physical frames stay as recorded.
        let physical = ["programCounter 0x1000", "returnAddress 0x2000", "returnAddress 0x3000", "returnAddress 0x4000"]
        XCTAssertEqual(resolve(thread, async: [0xA000]), physical)
        var bare = thread
        bare.asyncChains = []
        XCTAssertEqual(resolve(bare, async: [0x1fff, 0xA000]), physical)
    }

    func testAChainThatDoesNotResumeInAsyncCodeIsNotTakenForCallers() {
        var thread = CrashThread(tid: 1, crashed: true, framesFromSignalContext: true, frames: [0x1000, 0x2000, 0x3000])
        thread.asyncChains = [chain(1, [(0x100, 0x200, 0xA000), (0x200, 0x300, 0xB000)], end: .unreadable)]
        XCTAssertEqual(resolve(thread, async: [0x1fff]), ["programCounter 0x1000", "returnAddress 0x2000", "returnAddress 0x3000"])
        // A task's entry (one link, Parent 0) is taken even though it resumes in the runtime.
        thread.asyncChains = [chain(1, [(0x100, 0, 0xF000)])]
        XCTAssertEqual(resolve(thread, async: [0x1fff]), ["programCounter 0x1000", "returnAddress 0x2000", "asyncResumePoint 0xf000"])
    }

    func testFrameZerosContextRegisterIsTriedWhenItsFramePointerLedNowhere() {
        var thread = CrashThread(tid: 1, crashed: true, framesFromSignalContext: true, frames: [0x1000, 0x2000])
        thread.asyncChains = [chain(0, [(0x70, 0x80, 0x9990)], end: .unreadable),
                              chain(0, [(0x100, 0x200, 0xA000), (0x200, 0, 0xB000)], source: .contextRegister)]
        XCTAssertEqual(resolve(thread, async: [0x1000, 0xA000]),
                       ["programCounter 0x1000", "asyncResumePoint 0xa000", "asyncResumePoint 0xb000"])
        // The register is frame 0's alone: an async frame 1 does not use it.
        XCTAssertEqual(resolve(thread, async: [0x1fff, 0xA000]), ["programCounter 0x1000", "returnAddress 0x2000"])
    }

    func testAChainThatJoinsAnEarlierOneReadsOnFromWhereItJoins() {
        var thread = CrashThread(tid: 1, crashed: true, framesFromSignalContext: true, frames: [0x1000, 0x2000])
        thread.asyncChains = [chain(0, [(0x100, 0x200, 0xA000), (0x200, 0x300, 0xB000), (0x300, 0, 0xC000)]),
                              AsyncContextChain(frameIndex: 1, source: .framePointer, firstContext: 0x200, links: [], end: .joinsEarlierChain)]
        XCTAssertEqual(resolve(thread, async: [0x1fff, 0xB000]),
                       ["programCounter 0x1000", "returnAddress 0x2000", "asyncResumePoint 0xb000", "asyncResumePoint 0xc000"])
    }

    func testTheOutermostFramesOfACutStackNeverLeadToAsyncCallers() {
        var thread = CrashThread(tid: 1, crashed: true, framesFromSignalContext: true, omittedFrames: 1000, frames: [0x1000, 0x2000, 0x3000, 0x4000])
        thread.asyncChains = [chain(3, [(0x100, 0, 0xA000)])]
        XCTAssertEqual(resolve(thread, async: [0x3fff, 0xA000]).count, 4)
    }

    /// Beyond the backtracer: a child task's whole chain ends at its first context; the record
    /// names its task and the parent waiting for it, whose resume point (when it is async code,
    /// not a runtime adapter) and chain follow, one task deeper. A loop of tasks ends.
    func testAChildTasksParentTaskFollowsItsWholeChain() {
        var thread = CrashThread(tid: 1, crashed: true, framesFromSignalContext: true, frames: [0x1000])
        thread.asyncChains = [chain(0, [(0x100, 0x200, 0xA000), (0x200, 0, 0xB000)]),
                              chain(0, [(0x300, 0x400, 0xC000), (0x400, 0, 0xD000)], source: .parentTask)]
        thread.asyncTasks = [AsyncTaskInfo(task: 0x9000, id: 7, jobFlags: 0x1000000, firstContext: 0x200, parent: 0x8000,
                                           parentID: 3, parentResume: 0xE000, parentContext: 0x300),
                             AsyncTaskInfo(task: 0x8000, id: 3, jobFlags: 0, firstContext: 0x400, parent: nil)]
        let frames = ThreadFrames.resolve(thread) { $0.map { [0x1000, 0xA000, 0xE000].contains($0) } }
        XCTAssertEqual(frames.map(\.address), [0x1000, 0xA000, 0xB000, 0xE000, 0xC000, 0xD000])
        XCTAssertEqual(frames.map(\.taskDepth), [0, 0, 0, 1, 1, 1])
        XCTAssertEqual(frames.map(\.taskID), [7, 7, 7, 3, 3, 3])
        // A parent resuming in a runtime adapter (no async symbol) starts at its chain.
        let adapter = ThreadFrames.resolve(thread) { $0.map { [0x1000, 0xA000].contains($0) } }
        XCTAssertEqual(adapter.map(\.address), [0x1000, 0xA000, 0xB000, 0xC000, 0xD000])
        // A parent whose resume point is its context's own resume point shows it once.
        var waiting = thread
        waiting.asyncTasks[0].parentResume = 0xC000
        XCTAssertEqual(ThreadFrames.resolve(waiting) { $0.map { [0x1000, 0xA000, 0xC000].contains($0) } }.map(\.address),
                       [0x1000, 0xA000, 0xB000, 0xC000, 0xD000])
        // Tasks that name each other as parents do not loop.
        thread.asyncTasks[1] = AsyncTaskInfo(task: 0x9000, id: 7, jobFlags: 0x1000000, firstContext: 0x400, parent: 0x8000,
                                             parentID: 3, parentResume: 0xE000, parentContext: 0x300)
        XCTAssertLessThan(ThreadFrames.resolve(thread) { _ in [true] }.count, 20)
    }

    func testReturnAddressesAreLookedUpAtTheCallAndResumePointsAsTheyAre() {
        XCTAssertEqual(ThreadFrame(address: 0x2000, kind: .returnAddress, physicalIndex: 1, symbols: []).lookupAddress, 0x1fff)
        XCTAssertEqual(ThreadFrame(address: 0x2000, kind: .programCounter, physicalIndex: 0, symbols: []).lookupAddress, 0x2000)
        XCTAssertEqual(ThreadFrame(address: 0x2000, kind: .asyncResumePoint, physicalIndex: nil, symbols: []).lookupAddress, 0x2000)
    }

    /// Every defined function symbol `nm` lists in the crash-harness binary is where
    /// ELFSymbolTable finds it, at its first byte and at its last.
    func testTheSymbolTableNamesWhatNmNames() throws {
        let binary = BuiltProducts.harness
        let table = try ELFSymbolTable(path: binary)
        let nm = try Tools.output(try XCTUnwrap(Tools.find("nm")), ["--defined-only", "--print-size", binary])
        var checked = 0
        var byAddress: [UInt64: Set<String>] = [:]
        for symbol in table.symbols { byAddress[symbol.address, default: []].insert(symbol.name) }
        for line in nm.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 3)
            guard parts.count == 4, parts[2] == "t" || parts[2] == "T",
                  let address = UInt64(parts[0], radix: 16), let size = UInt64(parts[1], radix: 16), size > 0 else { continue }
            let name = String(parts[3])
            for probe in [address, address + size - 1] {
                let found = table.symbol(containing: probe)
                XCTAssertEqual(found?.address, address, "\(name) at 0x\(String(probe, radix: 16))")
                XCTAssertTrue(byAddress[address]?.contains(name) == true, name)
            }
            checked += 1
        }
        XCTAssertGreaterThan(checked, 1000, "nm listed the harness's functions")
        XCTAssertNil(table.symbol(containing: 0), "nothing at address 0")
    }

    func testFilesThatAreNoELFOrHaveNoSymbolTableAreRefused() throws {
        let directory = try Scratch.directory("elf-symbols")
        let garbage = directory + "/garbage"
        _ = FileManager.default.createFile(atPath: garbage, contents: Data(repeating: 0x7F, count: 100))
        XCTAssertThrowsError(try ELFSymbolTable(path: garbage))
        XCTAssertThrowsError(try ELFSymbolTable(path: directory + "/missing"))
        // A header whose section table points past the end of the file.
        var header = [UInt8](repeating: 0, count: 64)
        header[0...5] = [0x7F, 0x45, 0x4C, 0x46, 2, 1]
        header[40] = 0xFF; header[41] = 0xFF; header[58] = 64; header[60] = 3
        let bad = directory + "/bad-sections"
        _ = FileManager.default.createFile(atPath: bad, contents: Data(header))
        XCTAssertThrowsError(try ELFSymbolTable(path: bad))
    }
}
