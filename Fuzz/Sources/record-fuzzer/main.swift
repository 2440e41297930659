// main.swift — libFuzzer driver: any bytes through the record parser and everything the inspector derives from it.
//
// SwiftPM gives every executable its own entry point, so libFuzzer's main() cannot be used;
// this main hands control to libFuzzer through LLVMFuzzerRunDriver instead.
import SensorsEvents
import CrashRecordFormat
import CrashInspection
import CrashSentry
import CrashSymbolication
import Foundation
#if canImport(Glibc)
import Glibc
#endif

typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: FuzzCallback
) -> Int32

let testOneInput: FuzzCallback = { data, size in
    guard let data else { return 0 }
    let bytes = UnsafeBufferPointer(start: data, count: size)
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
                            sentAt: Date(timeIntervalSince1970: 0), osRelease: OSRelease(parsing: "ID=debian\nVERSION_ID=12\n"),
                            readImageFiles: false)
    return 0
}

var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv, testOneInput))
