// main.swift — symbolication-bench: how long symbolicating a crashed thread takes, warm and cold.
//
//   symbolication-bench RECORD [MAX-ITERATIONS]   (default 200, and at most 3 s per figure)
//
// RECORD is a crash record whose crashed thread has at least 60 frames and whose images are still
// on disk (scripts/bench.sh makes one with `crash-target deep`). Prints the median, min and max
// wall time of: one `Symbolicator` reused (a long-lived llvm-symbolizer: what the inspector and
// the reporter pay per record after the first), and a new `Symbolicator` each time
// (llvm-symbolizer started and the debug info parsed again); and the Sentry event the sinks send,
// with the frames named from the images' symbol tables (the default) and without (the data
// policy's functionNames off): what naming costs per event. A target of the main package, not
// of CaptureBench with the ordo-one benchmarks: CrashSymbolication is package-internal.
import CrashRecordFormat
import CrashSentry
import CrashSymbolication
import Foundation
#if canImport(Glibc)
import Glibc
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("symbolication-bench: \(message)\n".utf8))
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count == 2 || arguments.count == 3, arguments.count == 2 || Int(arguments[2]).map({ $0 > 0 }) == true else {
    fail("usage: symbolication-bench RECORD [MAX-ITERATIONS]")
}
let maxIterations = arguments.count == 3 ? Int(arguments[2])! : 200
let record: CrashRecord
do { record = try CrashRecordReader.read(path: arguments[1]) } catch { fail("\(error)") }
guard let thread = record.crashedThread, thread.frames.count >= 60 else {
    fail("expected a deep record, got \(record.crashedThread?.frames.count ?? 0) frames on the crashed thread")
}

/// Runs `body` up to `maxIterations` times (at most 3 s in all) and prints its median, min and max.
func measure<T>(_ label: String, _ body: () throws -> T) rethrows {
    let clock = ContinuousClock()
    var samples: [Duration] = []
    let deadline = clock.now + .seconds(3)
    while samples.count < maxIterations && (samples.isEmpty || clock.now < deadline) {
        // Symbolicating talks to llvm-symbolizer: the call cannot be optimised away.
        samples.append(try clock.measure { _ = try body() })
    }
    let milliseconds = samples.map { Double($0.components.attoseconds) / 1e15 + Double($0.components.seconds) * 1000 }.sorted()
    print(label + String(format: ": median %.2f ms, min %.2f, max %.2f (%d runs)",
                         milliseconds[milliseconds.count / 2], milliseconds.first!, milliseconds.last!, milliseconds.count))
}

do {
    let warm = try Symbolicator()
    let first = warm.symbolicate(frames: thread.frames, firstIsExact: true, images: record.images)
    guard first.contains(where: { $0.contains { $0.symbol != nil } }) else { fail("no frame of the record was symbolicated") }
    measure("symbolicate a \(thread.frames.count)-frame record, warm") {
        warm.symbolicate(frames: thread.frames, firstIsExact: true, images: record.images)
    }
    try measure("symbolicate a \(thread.frames.count)-frame record, cold (new Symbolicator)") {
        try Symbolicator().symbolicate(frames: thread.frames, firstIsExact: true, images: record.images)
    }
} catch { fail("\(error)") }

// The Sentry event as the sinks build it (no symbolizer): named, and not. The images' symbol
// tables are read once per process either way (the async frames are told from them).
let named = SentryEnvelope.event(record: record, eventID: String(repeating: "0", count: 32))
let namedFrames = named.exception.values.first?.stacktrace?.frames ?? []
guard namedFrames.contains(where: { $0.function != nil }) else { fail("the event's frames have no names") }
print("the Sentry event names \(namedFrames.filter { $0.function != nil }.count) of \(namedFrames.count) crashed-thread frames, \(namedFrames.filter { $0.inApp == true }.count) in_app")
measure("the Sentry event of the record, frames named from the symbol tables") {
    SentryEnvelope.event(record: record, eventID: String(repeating: "0", count: 32))
}
measure("the Sentry event of the record, no names (functionNames off)") {
    SentryEnvelope.event(record: record, eventID: String(repeating: "0", count: 32), functionNames: false)
}
