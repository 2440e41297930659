// CrashGrouping.swift — what a crash is grouped by, and by which rule: `crash-inspect groups`'
// signature and the Sentry event's fingerprint, when Sentry's own grouping by the app's frames
// has nothing to go on.
package import CrashRecordFormat

/// The frames a crash is grouped by (``FrameOrigin``):
/// - the first three frames of the program's own code, by function (closure numbers dropped:
///   they renumber when unrelated closures are added nearby);
/// - with none: the innermost frame of a package the program links (SwiftNIO, a C library):
///   its module and function, else its image's build id and the function's offset — a crash
///   inside a dependency groups by where in it, not by the libc or runtime frames above;
/// - with neither: the first three frames at all.
package struct CrashGrouping: Sendable, Equatable {
    package enum Rule: String, Sendable {
        case appFrames = "app frames"
        case packageFrame = "innermost package frame"
        case systemFrames = "system frames"

        /// As a Sentry tag's value.
        package var tag: String { String(rawValue.map { $0 == " " ? "_" : $0 }) }
    }

    /// One frame as grouping sees it.
    package struct Frame: Sendable {
        package var address: UInt64
        /// The function's name as the symbol table has it (mangled), when known.
        package var mangled: String?
        /// The function's name as shown, when known.
        package var name: String?
        /// The function's first instruction, when known.
        package var start: UInt64?

        package init(address: UInt64, mangled: String?, name: String?, start: UInt64? = nil) {
            self.address = address
            self.mangled = mangled
            self.name = name
            self.start = start
        }
    }

    package var rule: Rule
    /// The frames' keys, innermost first.
    package var frames: [String]

    /// The grouping of `record` whose focus thread's frames are `frames` (innermost first).
    package init(record: CrashRecord, frames: [Frame]) {
        let origins = frames.map { record.origin(ofFrameAt: $0.address, mangledName: $0.mangled ?? $0.name) }
        func key(_ frame: Frame) -> String {
            let name = frame.name.map(CrashRecord.withoutClosureNumbers)
            if let name { return name }
            return record.offsetLabel(for: frame.start ?? frame.address) ?? "0x" + String(frame.start ?? frame.address, radix: 16)
        }
        let app = zip(frames, origins).filter { $0.1.isApp }.map(\.0)
        if !app.isEmpty {
            rule = .appFrames
            self.frames = Array(app.prefix(3).map(key))
        } else if let (frame, origin) = zip(frames, origins).first(where: { if case .dependency = $0.1 { true } else { false } }) {
            rule = .packageFrame
            let image = record.image(containing: frame.address)
            if let name = frame.name {
                self.frames = ["\(origin.name): \(CrashRecord.withoutClosureNumbers(name))"]
            } else {
                let start = frame.start ?? frame.address
                let id = image.map { $0.buildIDHex.isEmpty ? "no build-id" : String($0.buildIDHex.prefix(16)) } ?? "?"
                self.frames = ["\(origin.name) (build \(id)) +0x" + String(start &- (image?.base ?? 0), radix: 16)]
            }
        } else {
            rule = .systemFrames
            self.frames = Array(frames.prefix(3).map(key))
        }
    }
}

extension CrashRecord {
    /// `closure #14 in f()` as `closure in f()`: closure numbers change when unrelated closures are added nearby.
    package static func withoutClosureNumbers(_ name: String) -> String {
        var out = ""
        var rest = Substring(name)
        while let range = rest.firstRange(of: "closure #") {
            out += rest[..<range.upperBound].dropLast(2)
            rest = rest[range.upperBound...].drop { $0.isNumber }
        }
        return out + rest
    }
}
