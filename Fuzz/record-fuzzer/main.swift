// main.swift — libFuzzer driver: any bytes through the record parser and everything the inspector derives from it.
//
// A target of the main package, so it reaches the package-internal modules it fuzzes
// (CrashInspection, CrashSentry, CrashSymbolication) and is compiled by every `swift build`.
// scripts/fuzz.sh builds it with `-sanitize=fuzzer -DRECORD_FUZZER`: then libFuzzer drives it
// through LLVMFuzzerRunDriver (SwiftPM gives every executable its own entry point, so libFuzzer's
// main() cannot be used). Any other build replays the files given as arguments (directories:
// every file in them) through the same function, e.g. a crash artifact libFuzzer left.
import HostFacts
import SensorsEvents
import CrashRecordFormat
import CrashInspection
import CrashMinidump
import CrashSentry
import CrashSymbolication
import Foundation
#if canImport(Glibc)
import Glibc
#endif

typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

let testOneInput: FuzzCallback = { data, size in
    guard let data else { return 0 }
    let bytes = UnsafeBufferPointer(start: data, count: size)
    // The minimised copy a sink sends (CrashDataPolicy): never traps, and reads back (it is empty when
    // the reader refuses the input outright).
    let redacted = RecordRedaction().apply(to: Array(bytes))
    if !redacted.isEmpty, (try? CrashRecordReader.parse(redacted)) == nil { fatalError("a redacted copy the reader refuses") }
    // The JSON parser reads untrusted text too (the app's before_send result, session files): any
    // bytes, never a trap.
    _ = JSONValue.parse(bytes)
    guard let record = try? CrashRecordReader.parse(bytes) else { return 0 }
    // What the inspector does with an untrusted record, short of running llvm-symbolizer.
    let inspection = Inspection(path: "fuzz.ccrec", record: record, symbolicator: nil)
    _ = Rendering.text(inspection)
    _ = Rendering.jsonText(inspection)
    _ = inspection.signature
    // The async frames of every thread as if every address were async code: hostile chains and
    // tasks (cycles, joins, loops of parents) must end.
    for thread in record.threads { _ = ThreadFrames.resolve(thread) { $0.map { _ in true } } }
    // The Sentry envelope as the uploader builds it, without reading the files the record names.
    let raw = Array(bytes)
    _ = SentryEnvelope.make(record: record, rawRecord: raw, fileName: "fuzz.ccrec", eventID: SentryEnvelope.eventID(rawRecord: raw),
                            sentAt: 0, osRelease: OSRelease(parsing: "ID=debian\nVERSION_ID=12\n"),
                            readImageFiles: false)
    // The minidump export: never traps, and every stream it lists lies inside the file.
    if let dump = try? Minidump(record: record) {
        let file = dump.bytes
        func u32(_ at: Int) -> Int { (0..<4).reduce(0) { $0 | Int(file[at + $1]) << (8 * $1) } }
        let streams = u32(8), directory = u32(12)
        for index in 0..<streams {
            let entry = directory + 12 * index
            if entry + 12 > file.count || u32(entry + 8) + u32(entry + 4) > file.count { fatalError("a minidump stream outside its file") }
        }
    }
    return 0
}

#if RECORD_FUZZER
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: FuzzCallback
) -> Int32

var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv, testOneInput))
#else
var replayed = 0
for argument in CommandLine.arguments.dropFirst() {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else {
        FileHandle.standardError.write(Data("record-fuzzer: no such file: \(argument)\n".utf8))
        exit(2)
    }
    let paths = isDirectory.boolValue
        ? ((try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []).sorted().map { argument + "/" + $0 }
        : [argument]
    for path in paths {
        guard let bytes = FileManager.default.contents(atPath: path) else { continue }
        _ = bytes.withUnsafeBytes { testOneInput($0.bindMemory(to: UInt8.self).baseAddress, $0.count) }
        replayed += 1
    }
}
print("record-fuzzer: replayed \(replayed) input(s) without a crash (built without -DRECORD_FUZZER: no fuzzing; see scripts/fuzz.sh)")
#endif
