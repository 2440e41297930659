// CrashRecordReaderTests.swift — the crash-record reader against whole, cut, damaged,
// foreign and hostile records.

import CCrashRecordLayout
import Foundation
import TestSupport
import XCTest

@testable import CrashRecordFormat

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

final class CrashRecordReaderTests: XCTestCase {
    // MARK: CRC-32

    func testCRC32OfTheCheckStringIs0xCBF43926() {
        XCTAssertEqual(CRC32.checksum(Array("123456789".utf8)), 0xCBF4_3926)
        XCTAssertEqual(CRC32.checksum([UInt8]()), 0)
    }

    func testCRC32CanBeComputedIncrementally() {
        let bytes = Array("The quick brown fox jumps over the lazy dog".utf8)
        XCTAssertEqual(CRC32.checksum(bytes), 0x414F_A339)
        for split in 0 ... bytes.count {
            let first = CRC32.checksum(bytes[0 ..< split])
            XCTAssertEqual(CRC32.checksum(bytes[split...], initial: first), 0x414F_A339, "split at \(split)")
        }
    }

    // MARK: Whole records

    func testACompleteRecordRoundTripsEveryField() throws {
        let record = try CrashRecordReader.parse(RecordBuilder.sample().build())
        XCTAssertTrue(record.isComplete)
        XCTAssertEqual(record.completeness, .complete)
        XCTAssertEqual(record, RecordBuilder.sampleExpectation)
    }

    func testTheDerivedViewsOfARecordFindTheCrashedThreadAndImages() throws {
        let record = try CrashRecordReader.parse(RecordBuilder.sample().build())
        XCTAssertEqual(record.crashedThread?.tid, 4243)
        XCTAssertEqual(record.image(containing: 0x5555_5555_4000)?.path, "/usr/bin/demo")
        XCTAssertEqual(record.image(containing: 0x5555_5555_4000 + 0x2_0000 - 1)?.path, "/usr/bin/demo")
        XCTAssertNil(record.image(containing: 0x5555_5555_4000 + 0x2_0000))
        XCTAssertNil(record.image(containing: 0x5555_5555_3FFF))
        XCTAssertEqual(record.process?.uptimeSeconds ?? 0, 2.5, accuracy: 1e-9)
        XCTAssertEqual(record.images.first?.buildIDHex, "00112233445566778899aabbccddeeff01234567")
    }

    func testAnImageAtTheTopOfTheAddressSpaceDoesNotOverflow() {
        let image = CrashImage(path: "/x", base: UInt64.max - 15, size: 64)
        XCTAssertTrue(image.contains(UInt64.max))
        XCTAssertFalse(image.contains(0))
        XCTAssertFalse(CrashImage(path: "/y", base: 100, size: 0).contains(100))
    }

    func testUptimeOfNonsenseClocksDoesNotTrap() {
        let process = CrashedProcess(
            pid: 1, tid: 1, startMonotonicNanoseconds: Int64.min, crashMonotonicNanoseconds: Int64.max)
        XCTAssertGreaterThan(process.uptimeSeconds, 0)
    }

    func testFaultAddressAndSenderAreNilUnlessTheirFlagsAreSet() throws {
        var builder = RecordBuilder()
        builder.crash(signo: SIGABRT, code: -6, faultAddress: 0xDEAD, senderPID: 77, senderUID: 501, flags: 0)
        builder.end()
        let signal = try XCTUnwrap(CrashRecordReader.parse(builder.build()).signal)
        XCTAssertEqual(signal.number, SIGABRT)
        XCTAssertNil(signal.faultAddress)
        XCTAssertNil(signal.sender)
    }

    /// A breadcrumb level the format does not define (a newer writer's, a C caller's of
    /// cc_breadcrumb) is kept as written, and shown as its number.
    func testABreadcrumbLevelTheFormatDoesNotDefineIsKeptAsWritten() throws {
        var builder = RecordBuilder()
        builder.breadcrumb(wallNanoseconds: 1, level: CC_BREADCRUMB_CRITICAL, message: "known")
        builder.breadcrumb(wallNanoseconds: 2, level: CC_BREADCRUMB_CRITICAL + 3, message: "from the future")
        builder.end()
        let levels = try CrashRecordReader.parse(builder.build()).breadcrumbs.map(\.level)
        XCTAssertEqual(levels, [.critical, .unknown(9)])
        XCTAssertEqual(levels.map(\.rawValue), [6, 9])
        XCTAssertEqual(levels.map(\.name), ["critical", "level 9"])
    }

    func testLaterStringsReplaceEarlierOnesButNotesAccumulate() throws {
        var builder = RecordBuilder()
        builder.string(CC_STR_APP_NAME, "first")
        builder.string(CC_STR_NOTE, "one")
        builder.string(CC_STR_APP_NAME, "second")
        builder.string(CC_STR_NOTE, "two")
        builder.string(cc_string_key(rawValue: 999), "from the future")
        builder.end()
        let record = try CrashRecordReader.parse(builder.build())
        XCTAssertEqual(record.appName, "second")
        XCTAssertEqual(record.notes, ["one", "two"])
        XCTAssertTrue(record.isComplete)
    }

    func testFixedStringsStopAtTheFirstNULAndInvalidUTF8IsRepaired() throws {
        var builder = RecordBuilder()
        var thread = cc_sec_thread_t()
        withUnsafeMutableBytes(of: &thread.name) { name in
            for (index, byte) in ([0x6F, 0x6B, 0x00, 0x6A, 0x75, 0x6E, 0x6B] as [UInt8]).enumerated() {
                name[index] = byte
            }
        }
        builder.raw(CC_SEC_THREAD.rawValue, RecordBuilder.bytes(of: thread))
        // A full 16-byte name with no NUL at all, then invalid UTF-8 in a variable string.
        builder.thread(tid: 2, name: "abcdefghijklmnop", flags: 0, frames: [])
        builder.raw(CC_SEC_STRING.rawValue, RecordBuilder.bytes(of: CC_STR_KERNEL.rawValue) + [0x4C, 0xFF, 0xFE, 0x78])
        builder.end()
        let record = try CrashRecordReader.parse(builder.build())
        XCTAssertEqual(record.threads.map(\.name), ["ok", "abcdefghijklmnop"])
        XCTAssertEqual(record.kernel, "L\u{FFFD}\u{FFFD}x")
    }

    func testAnUnknownSectionTypeIsSkippedAndTheEndStillMakesTheRecordComplete() throws {
        var builder = RecordBuilder()
        builder.string(CC_STR_APP_NAME, "demo")
        builder.raw(0xBEEF, [1, 2, 3, 4, 5])
        builder.raw(0, [])
        builder.string(CC_STR_APP_VERSION, "1.0")
        builder.end()
        let record = try CrashRecordReader.parse(builder.build())
        XCTAssertTrue(record.isComplete)
        XCTAssertEqual(record.unknownSectionTypes, [0xBEEF, 0])
        XCTAssertEqual(record.appName, "demo")
        XCTAssertEqual(record.appVersion, "1.0")
        XCTAssertEqual(record.sectionCount, 5)
        XCTAssertEqual(record.notes, [])
    }

    func testTrailingBytesAfterTheEndSectionAreIgnoredWithANote() throws {
        let bytes = RecordBuilder.sample().build() + [0xAA, 0xBB, 0xCC]
        let record = try CrashRecordReader.parse(bytes)
        XCTAssertTrue(record.isComplete)
        XCTAssertEqual(record.notes.last, "3 trailing bytes after the end section")
    }

    func testAnEndSectionThatMiscountsTheSectionsAddsANote() throws {
        var builder = RecordBuilder()
        builder.string(CC_STR_APP_NAME, "demo")
        builder.end(sectionCount: 7)
        let record = try CrashRecordReader.parse(builder.build())
        XCTAssertTrue(record.isComplete)
        XCTAssertEqual(record.notes, ["the end section counts 7 sections before it, but 1 were read"])
    }

    func testALargerHeaderSizeMovesTheFirstSection() throws {
        var builder = RecordBuilder.sample()
        builder.headerPadding = 16
        XCTAssertEqual(try CrashRecordReader.parse(builder.build()), RecordBuilder.sampleExpectation)
    }

    func testTheArchitectureComesFromTheHeader() throws {
        for (raw, expected) in [(1, CrashRecord.Architecture.x86_64), (2, .aarch64), (0, .unknown(0)), (9, .unknown(9))] {
            var builder = RecordBuilder()
            builder.arch = UInt16(raw)
            builder.end()
            XCTAssertEqual(try CrashRecordReader.parse(builder.build()).architecture, expected)
        }
    }

    func testParseAcceptsAnyCollectionOfBytes() throws {
        let bytes = RecordBuilder.sample().build()
        let slice = ([0xFF] + bytes)[1...]
        XCTAssertEqual(try CrashRecordReader.parse(slice), RecordBuilder.sampleExpectation)
        XCTAssertEqual(try CrashRecordReader.parse(Data(bytes)), RecordBuilder.sampleExpectation)
    }

    // MARK: Cut records

    func testATruncatedRecordStillYieldsEverySectionBeforeTheCut() throws {
        let builder = RecordBuilder.sample()
        let bytes = builder.build()
        let threadIndex = try XCTUnwrap(builder.sections.firstIndex { $0.type == CC_SEC_THREAD.rawValue })
        let cut = builder.sectionRanges()[threadIndex].lowerBound + 20
        let record = try CrashRecordReader.parse(bytes[0 ..< cut])
        XCTAssertFalse(record.isComplete)
        XCTAssertEqual(record.sectionCount, threadIndex)
        XCTAssertEqual(record.signal, RecordBuilder.sampleExpectation.signal)
        XCTAssertEqual(record.process, RecordBuilder.sampleExpectation.process)
        XCTAssertEqual(record.registers, RecordBuilder.sampleExpectation.registers)
        XCTAssertEqual(record.memory, RecordBuilder.sampleExpectation.memory)
        XCTAssertEqual(record.threads, [])
        guard case .incomplete(let reason) = record.completeness else { return XCTFail("complete") }
        XCTAssertTrue(reason.hasPrefix("truncated: "), reason)
        XCTAssertTrue(reason.contains("at offset \(cut - 20)"), reason)
    }

    func testTruncatingARecordAtEveryOffsetNeverCrashesAndNeverReportsComplete() throws {
        let builder = RecordBuilder.sample()
        let bytes = builder.build()
        let ends = builder.sectionRanges().map(\.upperBound)
        var previousCount = 0
        for length in 0 ..< bytes.count {
            let prefix = Array(bytes[0 ..< length])
            if length == 0 {
                XCTAssertThrowsError(try CrashRecordReader.parse(prefix)) { XCTAssertEqual($0 as? CrashRecordError, .empty) }
                continue
            }
            if length < MemoryLayout<cc_file_header_t>.size {
                XCTAssertThrowsError(try CrashRecordReader.parse(prefix)) { error in
                    guard case .notACrashRecord = error as? CrashRecordError else {
                        return XCTFail("length \(length): \(error)")
                    }
                }
                continue
            }
            let record: CrashRecord
            do {
                record = try CrashRecordReader.parse(prefix)
            } catch {
                XCTFail("length \(length) threw \(error)")
                continue
            }
            XCTAssertFalse(record.isComplete, "length \(length)")
            XCTAssertGreaterThanOrEqual(record.sectionCount, previousCount, "length \(length)")
            XCTAssertEqual(record.sectionCount, ends.filter { $0 <= length }.count, "length \(length)")
            previousCount = record.sectionCount
        }
        XCTAssertTrue(try CrashRecordReader.parse(bytes).isComplete)
    }

    func testARecordWithoutAnEndSectionIsIncomplete() throws {
        var builder = RecordBuilder.sample()
        builder.sections.removeLast()
        let record = try CrashRecordReader.parse(builder.build())
        XCTAssertEqual(record.completeness, .incomplete(reason: "no end section: the writer stopped before finishing"))
        XCTAssertEqual(record.appEndJSON, RecordBuilder.sampleExpectation.appEndJSON)
    }

    func testAHeaderWithNoSectionsIsIncompleteNotAnError() throws {
        let record = try CrashRecordReader.parse(RecordBuilder().build())
        XCTAssertFalse(record.isComplete)
        XCTAssertEqual(record.sectionCount, 0)
    }

    // MARK: Damaged records

    func testFlippingAnyByteOfASectionMakesTheRecordIncompleteWhileEarlierSectionsSurvive() throws {
        let builder = RecordBuilder.sample()
        let bytes = builder.build()
        let threadIndex = try XCTUnwrap(builder.sections.firstIndex { $0.type == CC_SEC_THREAD.rawValue })
        let range = builder.sectionRanges()[threadIndex]
        // Every payload byte and the CRC itself; header bytes are covered by the CRC too
        // but may also turn into a different (failing) length check.
        let payloadStart = range.lowerBound + MemoryLayout<cc_section_header_t>.size
        for position in payloadStart ..< range.upperBound {
            for mask: UInt8 in [0x01, 0x80, 0xFF] {
                var damaged = bytes
                damaged[position] ^= mask
                let record = try CrashRecordReader.parse(damaged)
                XCTAssertEqual(
                    record.completeness,
                    .incomplete(reason: "corrupt section at offset \(range.lowerBound): checksum mismatch"),
                    "byte \(position) ^ \(mask)")
                XCTAssertEqual(record.sectionCount, threadIndex)
                XCTAssertEqual(record.signal, RecordBuilder.sampleExpectation.signal)
                XCTAssertEqual(record.process, RecordBuilder.sampleExpectation.process)
                XCTAssertEqual(record.appName, RecordBuilder.sampleExpectation.appName)
                XCTAssertEqual(record.threads, [])
            }
        }
        for position in range.lowerBound ..< payloadStart {
            var damaged = bytes
            damaged[position] ^= 0x01
            let record = try CrashRecordReader.parse(damaged)
            XCTAssertFalse(record.isComplete, "header byte \(position)")
            XCTAssertEqual(record.signal, RecordBuilder.sampleExpectation.signal)
        }
    }

    func testASectionLengthOf0xFFFFFFFFIsIncompleteNotACrash() throws {
        var bytes = RecordBuilder.sample().build()
        let lengthOffset = MemoryLayout<cc_file_header_t>.size + MemoryLayout<cc_section_header_t>.offset(of: \.length)!
        bytes.replaceSubrange(lengthOffset ..< lengthOffset + 4, with: [0xFF, 0xFF, 0xFF, 0xFF])
        let record = try CrashRecordReader.parse(bytes)
        guard case .incomplete(let reason) = record.completeness else { return XCTFail("complete") }
        XCTAssertTrue(reason.hasPrefix("corrupt section length 4294967295 at offset 32"), reason)
        XCTAssertEqual(record.sectionCount, 0)
    }

    func testALengthJustOverTheMaximumIsCorruptAndOneJustUnderIsMerelyTruncated() throws {
        for (length, prefix) in [(CC_SECTION_MAX_LENGTH + 1, "corrupt section length"), (CC_SECTION_MAX_LENGTH, "truncated: ")] {
            var builder = RecordBuilder()
            builder.raw(CC_SEC_MEMORY.rawValue, [], lengthOverride: length)
            let record = try CrashRecordReader.parse(builder.build())
            guard case .incomplete(let reason) = record.completeness else { return XCTFail("complete") }
            XCTAssertTrue(reason.hasPrefix(prefix), reason)
        }
    }

    func testAThreadClaiming0x7fffffffFramesIsIncomplete() throws {
        var builder = RecordBuilder()
        builder.string(CC_STR_APP_NAME, "demo")
        builder.thread(tid: 1, name: "main", flags: CC_THREAD_CRASHED, frames: [1, 2, 3], frameCountOverride: 0x7FFF_FFFF)
        builder.end()
        let record = try CrashRecordReader.parse(builder.build())
        XCTAssertFalse(record.isComplete)
        XCTAssertEqual(record.appName, "demo")
        XCTAssertEqual(record.threads, [])
        guard case .incomplete(let reason) = record.completeness else { return XCTFail("complete") }
        XCTAssertTrue(reason.hasPrefix("corrupt section at offset"), reason)
        XCTAssertTrue(reason.contains("2147483647 frames"), reason)
    }

    func testAThreadClaimingOneFrameTooManyIsIncomplete() throws {
        var builder = RecordBuilder()
        builder.thread(tid: 1, name: "main", flags: 0, frames: [1, 2, 3], frameCountOverride: 4)
        builder.end()
        XCTAssertFalse(try CrashRecordReader.parse(builder.build()).isComplete)
    }

    func testRegistersClaimingMoreThanTheSectionHoldsAreIncomplete() throws {
        for count: UInt32 in [0xFFFF_FFFF, 3] {
            var builder = RecordBuilder()
            builder.registers([("rip", 1), ("rsp", 2)], countOverride: count)
            builder.end()
            let record = try CrashRecordReader.parse(builder.build())
            XCTAssertFalse(record.isComplete, "count \(count)")
            XCTAssertEqual(record.registers, [])
        }
    }

    func testEachThreadGetsItsOwnRegistersWhereverTheyStandAndTheCrashedThreadKeepsTheTopLevelOnes() throws {
        var builder = RecordBuilder()
        builder.registers([("rip", 0x10), ("rsp", 0x20)])
        builder.thread(tid: 1, name: "main", flags: CC_THREAD_CRASHED | CC_THREAD_FROM_CONTEXT, frames: [0x10])
        builder.thread(tid: 2, name: "worker", flags: CC_THREAD_FROM_CONTEXT | CC_THREAD_PTRACED, frames: [0x30, 0x40])
        builder.registers([("rip", 0x30), ("rsp", 0x38)], tid: 2)   // after its thread
        builder.registers([("rip", 0x50)], tid: 3)                   // before its thread
        builder.thread(tid: 3, name: "parked", flags: CC_THREAD_FROM_CONTEXT | CC_THREAD_STOPPED, frames: [0x50])
        builder.thread(tid: 4, name: "sandboxed", flags: CC_THREAD_NO_STACK | CC_THREAD_NOT_STOPPED | CC_THREAD_PTRACE_REFUSED, frames: [])
        builder.end()
        let record = try CrashRecordReader.parse(builder.build())
        XCTAssertTrue(record.isComplete)
        XCTAssertEqual(record.registers.map(\.name), ["rip", "rsp"])
        let byTid = Dictionary(uniqueKeysWithValues: record.threads.map { ($0.tid, $0) })
        XCTAssertEqual(byTid[1]?.registers, [])
        XCTAssertEqual(byTid[2]?.registers.map(\.value), [0x30, 0x38])
        XCTAssertEqual(byTid[2]?.ptraced, true)
        XCTAssertEqual(byTid[2]?.stopped, false)
        XCTAssertEqual(byTid[3]?.registers.map(\.value), [0x50])
        XCTAssertEqual(byTid[3]?.stopped, true)
        XCTAssertEqual(byTid[4]?.ptraceRefused, true)
        XCTAssertEqual(byTid[4]?.notStopped, true)
        XCTAssertEqual(byTid[4]?.registers, [])
    }

    func testThreadRegistersClaimingMoreThanTheSectionHoldsAreIncomplete() throws {
        var builder = RecordBuilder()
        builder.registers([("rip", 1)], countOverride: 0xFFFF_FFFF, tid: 2)
        builder.end()
        let record = try CrashRecordReader.parse(builder.build())
        XCTAssertFalse(record.isComplete)
    }

    func testRecordFileNamesRoundTripAndAnythingElseIsRefused() {
        let name = RecordFileName(milliseconds: 1_795_460_015_227, pid: 11931, tid: 11932)
        XCTAssertEqual(name.name, "crash-1795460015227-11931-11932.ccrec")
        XCTAssertEqual(RecordFileName(name.name), name)
        var partial = name
        partial.isPartial = true
        XCTAssertEqual(partial.name, "crash-1795460015227-11931-11932.ccrec.partial")
        XCTAssertEqual(RecordFileName("/var/crashes/" + partial.name), partial)
        for bad in ["crash-1-2.ccrec", "crash-1-2-3-4.ccrec", "crash-a-2-3.ccrec", "crash-1-2-3.txt", "crash-1-2-3",
                    "other-1-2-3.ccrec", "crash--2-3.ccrec", "crash-1-2-99999999999.ccrec", ".ccrec"] {
            XCTAssertNil(RecordFileName(bad), bad)
        }
        // Discovery goes by the extension (an odd name is still read, as untrusted as any).
        XCTAssertTrue(RecordFileName.isRecordFile("anything.ccrec"))
        XCTAssertTrue(RecordFileName.isRecordFile("anything.ccrec.partial"))
        XCTAssertFalse(RecordFileName.isRecordFile("anything.ccrec.tmp"))
        XCTAssertEqual(RecordFileName.stem(of: partial.name), "crash-1795460015227-11931-11932")
    }

    func testAKnownSectionShorterThanItsStructIsIncomplete() throws {
        let types: [cc_section_type] = [
            CC_SEC_CRASH, CC_SEC_PROCESS, CC_SEC_STRING, CC_SEC_REGISTERS, CC_SEC_MEMORY,
            CC_SEC_THREAD, CC_SEC_IMAGE, CC_SEC_BREADCRUMB, CC_SEC_END, CC_SEC_THREAD_REGISTERS,
        ]
        for type in types {
            var builder = RecordBuilder()
            builder.string(CC_STR_APP_NAME, "demo")
            builder.raw(type.rawValue, [1, 2, 3])
            builder.end()
            let record = try CrashRecordReader.parse(builder.build())
            XCTAssertEqual(record.appName, "demo")
            guard case .incomplete(let reason) = record.completeness else {
                XCTFail("type \(type.rawValue) complete")
                continue
            }
            XCTAssertTrue(reason.contains("shorter than its"), reason)
        }
    }

    func testAnOversizedBuildIDLengthKeepsOnlyTheField() throws {
        var builder = RecordBuilder()
        builder.image(path: "/lib/x.so", base: 0x1000, size: 0x1000, buildID: Array(0 ..< 32), flags: 0, buildIDLengthOverride: 0xFFFF_FFFF)
        builder.end()
        let record = try CrashRecordReader.parse(builder.build())
        XCTAssertTrue(record.isComplete)
        XCTAssertEqual(record.images.first?.buildID, Array(0 ..< 32))
    }

    // MARK: Unreadable headers

    func testAnEmptyBufferIsEmpty() {
        XCTAssertThrowsError(try CrashRecordReader.parse([UInt8]())) { XCTAssertEqual($0 as? CrashRecordError, .empty) }
    }

    func testForeignFilesAreNotCrashRecords() {
        var elf: [UInt8] = [0x7F, 0x45, 0x4C, 0x46, 2, 1, 1, 0] + [UInt8](repeating: 0, count: 8)
        elf += [2, 0, 0x3E, 0, 1, 0, 0, 0] + [UInt8](repeating: 0, count: 40)
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, 0x49, 0x48, 0x44, 0x52]
            + [UInt8](repeating: 0, count: 32)
        var generator = SplitMix64(seed: 7)
        let random = (0 ..< 4096).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
        let text = Array("CCRECORd is not the magic, and this line is long enough.".utf8)
        for (name, bytes) in [("elf", elf), ("png", png), ("random", random), ("text", text), ("short", [0x43, 0x43])] {
            XCTAssertThrowsError(try CrashRecordReader.parse(bytes), name) { error in
                guard case .notACrashRecord = error as? CrashRecordError else { return XCTFail("\(name): \(error)") }
            }
        }
        XCTAssertThrowsError(try CrashRecordReader.parse(elf)) {
            XCTAssertEqual($0 as? CrashRecordError, .notACrashRecord(reason: "bad magic"))
        }
    }

    func testVersionTwoAndVersionZeroAreUnsupported() {
        for version: UInt16 in [2, 0, 0xFFFF] {
            var builder = RecordBuilder.sample()
            builder.version = version
            XCTAssertThrowsError(try CrashRecordReader.parse(builder.build())) {
                XCTAssertEqual($0 as? CrashRecordError, .unsupportedVersion(Int(version)))
            }
        }
    }

    func testDamagingTheHeaderChecksumIsACorruptHeader() {
        let bytes = RecordBuilder.sample().build()
        // Any header byte after the magic and version, including the CRC itself.
        for position in MemoryLayout<cc_file_header_t>.offset(of: \.header_size)! ..< MemoryLayout<cc_file_header_t>.size {
            var damaged = bytes
            damaged[position] ^= 0x10
            XCTAssertThrowsError(try CrashRecordReader.parse(damaged), "byte \(position)") {
                XCTAssertEqual($0 as? CrashRecordError, .corruptHeader(reason: "header checksum mismatch"))
            }
        }
    }

    func testAnImpossibleHeaderSizeOrByteOrderIsACorruptHeader() {
        for (size, order) in [(UInt16(16), UInt8(1)), (UInt16(0xFFFF), 1), (UInt16(32), 2), (UInt16(32), 0)] {
            var builder = RecordBuilder.sample()
            builder.headerSizeOverride = size
            builder.byteOrder = order
            XCTAssertThrowsError(try CrashRecordReader.parse(builder.build()), "size \(size) order \(order)") { error in
                guard case .corruptHeader = error as? CrashRecordError else { return XCTFail("\(error)") }
            }
        }
    }

    func testErrorDescriptionsAreSingleHumanLines() {
        let errors: [CrashRecordError] = [
            .unreadable(path: "/tmp/x.ccrec", reason: "is a symbolic link"),
            .tooLarge(size: 20, limit: 10), .empty, .notACrashRecord(reason: "bad magic"),
            .unsupportedVersion(2), .corruptHeader(reason: "header checksum mismatch"),
        ]
        for error in errors {
            XCTAssertFalse(error.description.isEmpty)
            XCTAssertFalse(error.description.contains("\n"))
        }
        XCTAssertEqual(CrashRecordError.notACrashRecord(reason: "bad magic").description, "not a crash record: bad magic")
    }

    // MARK: Fuzz

    func testTwoThousandRandomMutationsOfAValidRecordNeverCrash() {
        let builder = RecordBuilder.sample()
        let original = builder.build()
        var generator = SplitMix64(seed: 0xC0FF_EE00_5EED)
        var outcomes = [String: Int]()
        for _ in 0 ..< 2000 {
            let bytes: [UInt8]
            if Bool.random(using: &generator) {
                bytes = Self.mutateBytes(original, using: &generator)
            } else {
                // Mutate inside a section and fix its CRC, so the damage reaches the decoders.
                var mutant = builder
                let index = Int.random(in: 0 ..< mutant.sections.count, using: &generator)
                mutant.sections[index].payload = Self.mutateBytes(mutant.sections[index].payload, using: &generator)
                if Int.random(in: 0 ..< 4, using: &generator) == 0 {
                    mutant.sections[index].type = UInt32.random(in: 0 ... 12, using: &generator)
                }
                bytes = mutant.build()
            }
            do {
                let record = try CrashRecordReader.parse(bytes)
                outcomes[record.isComplete ? "complete" : "incomplete", default: 0] += 1
            } catch let error as CrashRecordError {
                outcomes["\(error)".prefix(20).description, default: 0] += 1
            } catch {
                XCTFail("unexpected error type \(error)")
            }
        }
        XCTAssertGreaterThan(outcomes["complete", default: 0], 0, "\(outcomes)")
        XCTAssertGreaterThan(outcomes["incomplete", default: 0], 0, "\(outcomes)")
    }

    private static func mutateBytes(_ input: [UInt8], using generator: inout SplitMix64) -> [UInt8] {
        var bytes = input
        for _ in 0 ..< Int.random(in: 1 ... 4, using: &generator) {
            switch Int.random(in: 0 ..< 6, using: &generator) {
            case 0 where !bytes.isEmpty:  // flip a bit
                let position = Int.random(in: 0 ..< bytes.count, using: &generator)
                bytes[position] ^= 1 << UInt8.random(in: 0 ..< 8, using: &generator)
            case 1 where !bytes.isEmpty:  // set a random byte to an interesting value
                let position = Int.random(in: 0 ..< bytes.count, using: &generator)
                bytes[position] = [0x00, 0xFF, 0x7F, 0x80, 0x01].randomElement(using: &generator) ?? 0
            case 2 where bytes.count >= 4:  // overwrite a 32-bit word
                let position = Int.random(in: 0 ... bytes.count - 4, using: &generator)
                let word = [UInt32.max, 0x7FFF_FFFF, 0, 1, 0x0004_0001].randomElement(using: &generator) ?? 0
                bytes.replaceSubrange(position ..< position + 4, with: RecordBuilder.bytes(of: word))
            case 3 where !bytes.isEmpty:  // truncate
                bytes.removeLast(Int.random(in: 1 ... bytes.count, using: &generator))
            case 4:  // insert random bytes
                let position = Int.random(in: 0 ... bytes.count, using: &generator)
                let extra = (0 ..< Int.random(in: 1 ... 16, using: &generator)).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
                bytes.insert(contentsOf: extra, at: position)
            default:  // delete a run
                guard !bytes.isEmpty else { break }
                let position = Int.random(in: 0 ..< bytes.count, using: &generator)
                let length = Int.random(in: 1 ... min(16, bytes.count - position), using: &generator)
                bytes.removeSubrange(position ..< position + length)
            }
        }
        return bytes
    }

    // MARK: Files

    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("CrashRecordReaderTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func write(_ bytes: [UInt8], named name: String) throws -> String {
        let url = directory.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url.path
    }

    func testReadingAFileYieldsTheSameRecordAsParsingItsBytes() throws {
        let path = try write(RecordBuilder.sample().build(), named: "a.ccrec")
        XCTAssertEqual(try CrashRecordReader.read(path: path), RecordBuilder.sampleExpectation)
    }

    func testReadingAPartialFileYieldsWhatItHolds() throws {
        let bytes = RecordBuilder.sample().build()
        let path = try write(Array(bytes.dropLast(10)), named: "a.ccrec.partial")
        let record = try CrashRecordReader.read(path: path)
        XCTAssertFalse(record.isComplete)
        XCTAssertEqual(record.signal, RecordBuilder.sampleExpectation.signal)
    }

    func testReadingASymlinkFailsAsUnreadable() throws {
        let target = try write(RecordBuilder.sample().build(), named: "target.ccrec")
        let link = directory.appendingPathComponent("link.ccrec").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        XCTAssertThrowsError(try CrashRecordReader.read(path: link)) {
            XCTAssertEqual($0 as? CrashRecordError, .unreadable(path: link, reason: "is a symbolic link"))
        }
    }

    func testReadingADirectoryFailsAsUnreadable() throws {
        let path = directory.path
        XCTAssertThrowsError(try CrashRecordReader.read(path: path)) {
            XCTAssertEqual($0 as? CrashRecordError, .unreadable(path: path, reason: "is a directory"))
        }
    }

    func testReadingAFIFOFailsWithoutBlocking() throws {
        let path = directory.appendingPathComponent("fifo.ccrec").path
        XCTAssertEqual(mkfifo(path, 0o600), 0)
        XCTAssertThrowsError(try CrashRecordReader.read(path: path)) {
            XCTAssertEqual($0 as? CrashRecordError, .unreadable(path: path, reason: "is not a regular file"))
        }
    }

    func testReadingAMissingFileFailsAsUnreadable() {
        let path = directory.appendingPathComponent("missing.ccrec").path
        XCTAssertThrowsError(try CrashRecordReader.read(path: path)) { error in
            guard case .unreadable(let failedPath, _) = error as? CrashRecordError else { return XCTFail("\(error)") }
            XCTAssertEqual(failedPath, path)
        }
    }

    func testReadingAnOversizedFileFailsAsTooLarge() throws {
        let bytes = RecordBuilder.sample().build()
        let path = try write(bytes, named: "big.ccrec")
        XCTAssertThrowsError(try CrashRecordReader.read(path: path, sizeLimit: 100)) {
            XCTAssertEqual($0 as? CrashRecordError, .tooLarge(size: bytes.count, limit: 100))
        }
        XCTAssertNoThrow(try CrashRecordReader.read(path: path, sizeLimit: bytes.count))
        XCTAssertEqual(CrashRecordReader.defaultSizeLimit, 16 * 1024 * 1024)
    }

    func testReadingAnEmptyFileFailsAsEmpty() throws {
        let path = try write([], named: "empty.ccrec")
        XCTAssertThrowsError(try CrashRecordReader.read(path: path)) {
            XCTAssertEqual($0 as? CrashRecordError, .empty)
        }
    }

    // MARK: Async context chains

    func testTheAbortMessageIsReadAndIsTheLastWordsOnlyWithoutASwiftMessage() throws {
        var builder = RecordBuilder()
        builder.string(CC_STR_ABORT_MESSAGE, "free(): double free detected in tcache 2")
        var record = try CrashRecordReader.parse(builder.build())
        XCTAssertEqual(record.abortMessage, "free(): double free detected in tcache 2")
        XCTAssertEqual(record.lastWords, "free(): double free detected in tcache 2")
        builder.string(CC_STR_FATAL_MESSAGE, "Fatal error: boom")
        record = try CrashRecordReader.parse(builder.build())
        XCTAssertEqual(record.lastWords, "Fatal error: boom")
    }

    func testRuntimeWarningsAreReadApartFromTheMessageEachOnceWithItsCount() throws {
        var builder = RecordBuilder()
        let leak = "SWIFT TASK CONTINUATION MISUSE: accept() leaked its continuation without resuming it. This may cause tasks waiting on it to remain suspended forever."
        builder.string(CC_STR_RUNTIME_WARNINGS, leak + "\n" + leak + "\n  \nSWIFT TASK CONTINUATION MISUSE: other() leaked its continuation\n" + leak)
        var record = try CrashRecordReader.parse(builder.build())
        XCTAssertNil(record.fatalMessage)
        XCTAssertNil(record.lastWords, "a warning is no crash's last words")
        XCTAssertEqual(record.runtimeWarnings, [.init(text: leak, count: 3),
                                                .init(text: "SWIFT TASK CONTINUATION MISUSE: other() leaked its continuation", count: 1)])
        XCTAssertEqual(record.runtimeWarningLines, leak + " (×3)\nSWIFT TASK CONTINUATION MISUSE: other() leaked its continuation")
        builder.string(CC_STR_FATAL_MESSAGE, "main.swift:3: Fatal error: boom")
        record = try CrashRecordReader.parse(builder.build())
        XCTAssertEqual(record.fatalMessage, "main.swift:3: Fatal error: boom")
        XCTAssertEqual(record.runtimeWarnings.count, 2)
        XCTAssertEqual(try CrashRecordReader.parse(RecordBuilder().build()).runtimeWarnings, [])
    }

    func testAsyncChainsAttachToTheirThreadWithLinksEndsAndSources() throws {
        var builder = RecordBuilder()
        builder.thread(tid: 7, name: "pool", flags: CC_THREAD_CRASHED | CC_THREAD_FROM_CONTEXT, frames: [0x1000, 0x2000, 0x3000])
        builder.asyncChain(tid: 7, frameIndex: 1, flags: CC_ASYNC_FRAME_POINTER, end: CC_ASYNC_END_PARENT_NULL.rawValue, first: 0x100,
                           links: [(0x100, 0x200, 0xA000), (0x200, 0, 0xB000)])
        builder.asyncChain(tid: 7, frameIndex: 0, flags: CC_ASYNC_CONTEXT_REGISTER | CC_ASYNC_SEEN, end: CC_ASYNC_END_SEEN.rawValue,
                           first: 0x200, links: [])
        builder.asyncChain(tid: 7, frameIndex: 2, flags: CC_ASYNC_FRAME_POINTER, end: 99, first: 0x300, links: [(0x300, 0x8, 0xC000)])
        builder.asyncChain(tid: 7, frameIndex: 3, flags: CC_ASYNC_FRAME_POINTER, end: CC_ASYNC_END_CYCLE.rawValue, first: 0x400,
                           links: [(0x400, 0x400, 0xD000)])   // frame 3 does not exist: dropped
        builder.asyncChain(tid: 8, frameIndex: 0, flags: CC_ASYNC_FRAME_POINTER, end: CC_ASYNC_END_LIMIT.rawValue, first: 0x500,
                           links: [(0x500, 0x600, 0xE000)])   // no such thread: nowhere to go
        builder.end()
        let record = try CrashRecordReader.parse(builder.build())
        XCTAssertTrue(record.isComplete)
        let thread = try XCTUnwrap(record.crashedThread)
        XCTAssertEqual(thread.asyncChains.map(\.frameIndex), [1, 0, 2])
        XCTAssertEqual(thread.asyncChains.map(\.end), [.parentNull, .joinsEarlierChain, .unknown(99)])
        XCTAssertEqual(thread.asyncChains.map(\.source), [.framePointer, .contextRegister, .framePointer])
        XCTAssertEqual(thread.asyncChain(atFrame: 1, source: .framePointer)?.links,
                       [.init(context: 0x100, parent: 0x200, resume: 0xA000), .init(context: 0x200, parent: 0, resume: 0xB000)])
        // A chain that joins an earlier one reads on from where it joins.
        XCTAssertEqual(thread.asyncLinks(from: 0x200).map(\.resume), [0xB000])
        XCTAssertEqual(thread.asyncLinks(from: 0x100).map(\.resume), [0xA000, 0xB000])
        XCTAssertEqual(thread.asyncLinks(from: 0x999), [])
    }

    func testAsyncTasksAttachToTheirThreadAndTellChildKinds() throws {
        var builder = RecordBuilder()
        builder.thread(tid: 7, name: "pool", flags: CC_THREAD_CRASHED, frames: [0x1000])
        builder.asyncTask(cc_sec_async_task_t(tid: 7, job_flags: CC_TASK_IS_CHILD | CC_TASK_IS_ASYNC_LET | 0x1500, task: 0x9000,
                                              first_context: 0x200, parent: 0x8000, parent_resume: 0xE000, parent_context: 0x300,
                                              task_id: 12, parent_id: 11))
        builder.asyncTask(cc_sec_async_task_t(tid: 7, job_flags: 0x1500, task: 0x8000, first_context: 0x400, parent: 0,
                                              parent_resume: 0, parent_context: 0, task_id: 11, parent_id: 0))
        builder.raw(CC_SEC_ASYNC_TASK.rawValue, [0, 1, 2])
        let record = try CrashRecordReader.parse(builder.build())
        let tasks = try XCTUnwrap(record.crashedThread?.asyncTasks)
        XCTAssertEqual(tasks.map(\.id), [12, 11])
        XCTAssertEqual(tasks.map(\.isChild), [true, false])
        XCTAssertEqual(tasks.map(\.isAsyncLet), [true, false])
        XCTAssertEqual(tasks.map(\.isGroupChild), [false, false])
        XCTAssertEqual(tasks.first?.parent, 0x8000)
        XCTAssertNil(tasks.last?.parent)
        XCTAssertEqual(record.crashedThread?.asyncTask(firstContext: 0x400)?.task, 0x8000)
        guard case .incomplete = record.completeness else { return XCTFail("a task section shorter than its struct is damage") }
    }

    func testAnAsyncChainWhoseLinksDoNotFitIsDamageThatKeepsWhatCameBefore() throws {
        var builder = RecordBuilder()
        builder.thread(tid: 7, name: "pool", flags: CC_THREAD_CRASHED, frames: [0x1000])
        builder.asyncChain(tid: 7, frameIndex: 0, flags: CC_ASYNC_FRAME_POINTER, end: CC_ASYNC_END_PARENT_NULL.rawValue, first: 0x100,
                           links: [(0x100, 0, 0xA000)], linkCountOverride: UInt32.max)
        builder.raw(CC_SEC_ASYNC_CHAIN.rawValue, [1, 2, 3])   // shorter than its struct
        builder.end()
        let record = try CrashRecordReader.parse(builder.build())
        guard case .incomplete(let reason) = record.completeness else { return XCTFail("a damaged chain must make the record incomplete") }
        XCTAssertTrue(reason.contains("async"), reason)
        XCTAssertEqual(record.crashedThread?.frames, [0x1000])
        XCTAssertEqual(record.crashedThread?.asyncChains, [])
    }

    func testACycleOfLinksAcrossChainsEndsTheWalkInsteadOfLooping() throws {
        var thread = CrashThread(tid: 1, frames: [0x10])
        thread.asyncChains = [
            AsyncContextChain(frameIndex: 0, source: .framePointer, firstContext: 0x100,
                              links: [.init(context: 0x100, parent: 0x200, resume: 0xA)], end: .joinsEarlierChain),
            AsyncContextChain(frameIndex: 0, source: .contextRegister, firstContext: 0x200,
                              links: [.init(context: 0x200, parent: 0x100, resume: 0xB)], end: .cycle),
        ]
        XCTAssertEqual(thread.asyncLinks(from: 0x100).map(\.resume), [0xA, 0xB])
    }
}

// MARK: - Test helpers

/// Builds valid record bytes (header and sections with their CRCs) from the C structs in
/// cc_record.h, so tests never hand-write hex and always share the writer's layout.
/// (Also RecordRedactionTests': sections no real record holds.)
struct RecordBuilder {
    var version = UInt16(CC_RECORD_VERSION)
    var arch = UInt16(CC_ARCH_X86_64.rawValue)
    var byteOrder: UInt8 = 1
    /// Extra bytes between the 32-byte header and the first section (header_size grows).
    var headerPadding = 0
    /// A header_size to write regardless of `headerPadding`.
    var headerSizeOverride: UInt16?
    var sections: [(type: UInt32, payload: [UInt8], lengthOverride: UInt32?)] = []

    static func bytes<T>(of value: T) -> [UInt8] {
        withUnsafeBytes(of: value) { Array($0) }
    }

    static func setChars<T>(_ field: inout T, _ text: String) {
        withUnsafeMutableBytes(of: &field) { buffer in
            for (index, byte) in text.utf8.prefix(buffer.count).enumerated() {
                buffer[index] = byte
            }
        }
    }

    mutating func raw(_ type: UInt32, _ payload: [UInt8], lengthOverride: UInt32? = nil) {
        sections.append((type, payload, lengthOverride))
    }

    mutating func crash(
        signo: Int32, code: Int32, faultAddress: UInt64, senderPID: Int32 = 0, senderUID: UInt32 = 0,
        flags: UInt32, errno: Int32 = 0, name: String = "", codeName: String = "", codeDescription: String = ""
    ) {
        var crash = cc_sec_crash_t()
        crash.signo = signo
        crash.code = code
        crash.fault_address = faultAddress
        crash.sender_pid = senderPID
        crash.sender_uid = senderUID
        crash.flags = flags
        crash.errno_at_crash = errno
        Self.setChars(&crash.signal_name, name)
        Self.setChars(&crash.code_name, codeName)
        Self.setChars(&crash.code_description, codeDescription)
        raw(CC_SEC_CRASH.rawValue, Self.bytes(of: crash))
    }

    mutating func process(_ value: CrashedProcess) {
        var process = cc_sec_process_t()
        process.pid = value.pid
        process.tid = value.tid
        process.ppid = value.ppid
        process.uid = value.uid
        process.start_wall_ns = value.startWallNanoseconds
        process.crash_wall_ns = value.crashWallNanoseconds
        process.start_mono_ns = value.startMonotonicNanoseconds
        process.crash_mono_ns = value.crashMonotonicNanoseconds
        Self.setChars(&process.thread_name, value.threadName)
        raw(CC_SEC_PROCESS.rawValue, Self.bytes(of: process))
    }

    mutating func string(_ key: cc_string_key, _ text: String) {
        raw(CC_SEC_STRING.rawValue, Self.bytes(of: cc_sec_string_t(key: key.rawValue)) + Array(text.utf8))
    }

    mutating func registers(_ values: [(String, UInt64)], countOverride: UInt32? = nil, tid: Int32? = nil) {
        var payload = Self.bytes(of: cc_sec_registers_t(arch: UInt32(arch), count: countOverride ?? UInt32(values.count)))
        for (name, value) in values {
            var register = cc_register_t()
            Self.setChars(&register.name, name)
            register.value = value
            payload += Self.bytes(of: register)
        }
        if let tid {
            raw(CC_SEC_THREAD_REGISTERS.rawValue, Self.bytes(of: cc_sec_thread_registers_t(tid: tid, reserved: 0)) + payload)
        } else {
            raw(CC_SEC_REGISTERS.rawValue, payload)
        }
    }

    mutating func memory(label: String, address: UInt64, bytes: [UInt8]) {
        var memory = cc_sec_memory_t()
        memory.address = address
        Self.setChars(&memory.label, label)
        raw(CC_SEC_MEMORY.rawValue, Self.bytes(of: memory) + bytes)
    }

    mutating func thread(tid: Int32, name: String, flags: UInt32, frames: [UInt64], frameCountOverride: UInt32? = nil) {
        var thread = cc_sec_thread_t()
        thread.tid = tid
        thread.flags = flags
        Self.setChars(&thread.name, name)
        thread.frame_count = frameCountOverride ?? UInt32(frames.count)
        raw(CC_SEC_THREAD.rawValue, Self.bytes(of: thread) + frames.flatMap { Self.bytes(of: $0) })
    }

    mutating func asyncChain(tid: Int32, frameIndex: UInt32, flags: UInt32, end: UInt32, first: UInt64,
                             links: [(context: UInt64, parent: UInt64, resume: UInt64)], linkCountOverride: UInt32? = nil) {
        var head = cc_sec_async_chain_t()
        head.tid = tid
        head.frame_index = frameIndex
        head.flags = flags
        head.end = end
        head.first_context = first
        head.link_count = linkCountOverride ?? UInt32(links.count)
        raw(CC_SEC_ASYNC_CHAIN.rawValue, Self.bytes(of: head) + links.flatMap {
            Self.bytes(of: cc_async_link_t(context: $0.context, parent: $0.parent, resume: $0.resume))
        })
    }

    mutating func asyncTask(_ value: cc_sec_async_task_t) {
        raw(CC_SEC_ASYNC_TASK.rawValue, Self.bytes(of: value))
    }

    mutating func image(path: String, base: UInt64, size: UInt64, buildID: [UInt8], flags: UInt32, buildIDLengthOverride: UInt32? = nil) {
        var image = cc_sec_image_t()
        image.base = base
        image.size = size
        image.build_id_length = buildIDLengthOverride ?? UInt32(buildID.count)
        image.flags = flags
        withUnsafeMutableBytes(of: &image.build_id) { field in
            for (index, byte) in buildID.prefix(field.count).enumerated() { field[index] = byte }
        }
        raw(CC_SEC_IMAGE.rawValue, Self.bytes(of: image) + Array(path.utf8))
    }

    mutating func breadcrumb(wallNanoseconds: Int64, level: UInt32, message: String) {
        let crumb = cc_sec_breadcrumb_t(wall_ns: wallNanoseconds, level: level, reserved: 0)
        raw(CC_SEC_BREADCRUMB.rawValue, Self.bytes(of: crumb) + Array(message.utf8))
    }

    mutating func appEnd(_ json: String) {
        raw(CC_SEC_APP_END.rawValue, Array(json.utf8))
    }

    mutating func end(sectionCount: UInt32? = nil) {
        let count = sectionCount ?? UInt32(sections.count)
        raw(CC_SEC_END.rawValue, Self.bytes(of: cc_sec_end_t(section_count: count, write_microseconds: 0)))
    }

    func header() -> [UInt8] {
        var header = cc_file_header_t()
        Self.setChars(&header.magic, CC_RECORD_MAGIC)
        header.version = version
        header.header_size = headerSizeOverride ?? UInt16(MemoryLayout<cc_file_header_t>.size + headerPadding)
        header.arch = arch
        header.byte_order = byteOrder
        header.pointer_size = 8
        let crcOffset = MemoryLayout<cc_file_header_t>.offset(of: \.header_crc)!
        header.header_crc = CRC32.checksum(Self.bytes(of: header)[0 ..< crcOffset])
        return Self.bytes(of: header) + [UInt8](repeating: 0xEE, count: headerPadding)
    }

    static func encodeSection(type: UInt32, payload: [UInt8], lengthOverride: UInt32? = nil) -> [UInt8] {
        let sectionHeader = cc_section_header_t(type: type, length: lengthOverride ?? UInt32(payload.count))
        let covered = bytes(of: sectionHeader) + payload
        return covered + bytes(of: CRC32.checksum(covered))
    }

    func build() -> [UInt8] {
        sections.reduce(header()) { $0 + Self.encodeSection(type: $1.type, payload: $1.payload, lengthOverride: $1.lengthOverride) }
    }

    /// Where each section (header through CRC) lies in `build()`.
    func sectionRanges() -> [Range<Int>] {
        var offset = header().count
        return sections.map { section in
            let size = Self.encodeSection(type: section.type, payload: section.payload).count
            defer { offset += size }
            return offset ..< offset + size
        }
    }

    static let sampleProcess = CrashedProcess(
        pid: 4242, tid: 4243, ppid: 1, uid: 1000,
        startWallNanoseconds: 1_700_000_000_000_000_000, crashWallNanoseconds: 1_700_000_002_500_000_000,
        startMonotonicNanoseconds: 10_000_000_000, crashMonotonicNanoseconds: 12_500_000_000,
        threadName: "worker")

    static let sampleBuildID: [UInt8] = [
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99,
        0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF, 0x01, 0x23, 0x45, 0x67,
    ]

    /// A record with one of everything.
    static func sample() -> RecordBuilder {
        var builder = RecordBuilder()
        builder.crash(
            signo: SIGSEGV, code: 1, faultAddress: 0x10, senderPID: 99, senderUID: 501,
            flags: CC_CRASH_FAULT_ADDRESS | CC_CRASH_FROM_PROCESS, errno: 2,
            name: "SIGSEGV", codeName: "SEGV_MAPERR", codeDescription: "address not mapped to object")
        builder.process(sampleProcess)
        builder.string(CC_STR_APP_NAME, "demo")
        builder.string(CC_STR_APP_VERSION, "1.2.3")
        builder.string(CC_STR_EXECUTABLE_PATH, "/usr/bin/demo")
        builder.string(CC_STR_FATAL_MESSAGE, "Fatal error: Index out of range — ünïcode")
        builder.string(CC_STR_KERNEL, "Linux 6.8.0 #1 SMP x86_64")
        builder.string(CC_STR_NOTE, "first note")
        builder.string(CC_STR_NOTE, "second note")
        builder.registers([("rip", 0x5555_5555_4123), ("rsp", 0x7FFF_FFFF_E000), ("r15", UInt64.max)])
        builder.memory(label: "pc", address: 0x5555_5555_4100, bytes: Array(0 ..< 64))
        builder.thread(
            tid: 4243, name: "worker", flags: CC_THREAD_CRASHED | CC_THREAD_FROM_CONTEXT | CC_THREAD_TRUNCATED,
            frames: [0x5555_5555_4123, 0x5555_5555_4200, 0x7F00_0000_1000])
        builder.thread(tid: 4242, name: "main", flags: CC_THREAD_NO_STACK, frames: [])
        builder.image(path: "/usr/bin/demo", base: 0x5555_5555_4000, size: 0x2_0000, buildID: sampleBuildID, flags: CC_IMAGE_MAIN_EXECUTABLE)
        builder.image(path: "/usr/lib/libc.so.6", base: 0x7F00_0000_0000, size: 0x20_0000, buildID: [], flags: 0)
        builder.breadcrumb(wallNanoseconds: 1_700_000_001_000_000_000, level: CC_BREADCRUMB_INFO, message: "opened file")
        builder.breadcrumb(wallNanoseconds: 1_700_000_002_000_000_000, level: CC_BREADCRUMB_WARNING, message: "low memory")
        builder.appEnd(#"{"event":"$AppEnd","properties":{"$app_crashed_reason":"SIGSEGV"}}"#)
        builder.end()
        return builder
    }

    /// What `sample()` must read back as.
    static let sampleExpectation = CrashRecord(
        version: 1,
        architecture: .x86_64,
        completeness: .complete,
        signal: SignalInfo(
            number: SIGSEGV, name: "SIGSEGV", code: 1, codeName: "SEGV_MAPERR",
            codeDescription: "address not mapped to object", faultAddress: 0x10,
            sender: .init(pid: 99, uid: 501), errnoAtCrash: 2),
        process: sampleProcess,
        appName: "demo",
        appVersion: "1.2.3",
        executablePath: "/usr/bin/demo",
        fatalMessage: "Fatal error: Index out of range — ünïcode",
        kernel: "Linux 6.8.0 #1 SMP x86_64",
        notes: ["first note", "second note"],
        registers: [
            Register(name: "rip", value: 0x5555_5555_4123), Register(name: "rsp", value: 0x7FFF_FFFF_E000),
            Register(name: "r15", value: UInt64.max),
        ],
        memory: [MemoryWindow(label: "pc", address: 0x5555_5555_4100, bytes: Array(0 ..< 64))],
        threads: [
            CrashThread(
                tid: 4243, name: "worker", crashed: true, framesFromSignalContext: true, truncated: true,
                stackUnavailable: false, frames: [0x5555_5555_4123, 0x5555_5555_4200, 0x7F00_0000_1000]),
            CrashThread(tid: 4242, name: "main", crashed: false, stackUnavailable: true, frames: []),
        ],
        images: [
            CrashImage(path: "/usr/bin/demo", base: 0x5555_5555_4000, size: 0x2_0000, buildID: sampleBuildID, isMainExecutable: true),
            CrashImage(path: "/usr/lib/libc.so.6", base: 0x7F00_0000_0000, size: 0x20_0000, buildID: [], isMainExecutable: false),
        ],
        breadcrumbs: [
            Breadcrumb(wallNanoseconds: 1_700_000_001_000_000_000, level: .info, message: "opened file"),
            Breadcrumb(wallNanoseconds: 1_700_000_002_000_000_000, level: .warning, message: "low memory"),
        ],
        appEndJSON: #"{"event":"$AppEnd","properties":{"$app_crashed_reason":"SIGSEGV"}}"#,
        unknownSectionTypes: [],
        sectionCount: 19
    )
}

