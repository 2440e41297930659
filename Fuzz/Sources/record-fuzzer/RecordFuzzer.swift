// RecordFuzzer.swift — libFuzzer entry point: any bytes through the record parser and everything the inspector derives from it.
import CrashCapture
import CrashInspection

@_cdecl("LLVMFuzzerTestOneInput")
public func recordFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard let record = try? CrashRecordReader.parse(bytes) else { return 0 }
    // What the inspector does with an untrusted record, without running llvm-symbolizer.
    let inspection = Inspection(path: "fuzz.ccrec", record: record, symbolicator: nil)
    _ = Rendering.text(inspection)
    _ = Rendering.encode(Rendering.json(inspection))
    _ = inspection.signature
    _ = SentryEnvelope.make(inspection, rawRecord: Array(bytes), eventID: "00000000000000000000000000000000")
    return 0
}
