// Fixture.swift — a tiny C program compiled here, in several forms, and what binutils say about it.
//
// The truth for every test in this target comes from tools no one here wrote: readelf (build-id,
// program headers), nm (symbol addresses and sizes), addr2line (function, inlined chain, file
// and line), swift-demangle.
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

/// The program, with `square` inlined into `alpha` (-O1, always_inline).
let programSource = """
#include <stdio.h>
volatile int sink;
static inline __attribute__((always_inline)) int square(int x) {
    sink += x;
    return x * x;
}
__attribute__((noinline)) int alpha(int v) {
    int s = 0;
    for (int i = 0; i < v; i++)
        s += square(i);
    return s;
}
__attribute__((noinline)) int beta(int v) {
    return alpha(v) + 1;
}
int main(int argc, char **argv) {
    printf("%d\\n", beta(argc));
    return 0;
}

"""

/// The compiled forms of the program, built once per test process.
struct Fixture {
    let directory: String
    /// PIE, `--build-id=sha1` (20 bytes), with debug info.
    let pie: String
    /// Not PIE (first load at 0x400000), `--build-id=md5` (16 bytes).
    let nonPIE: String
    /// `--build-id=none`.
    let noBuildID: String
    /// `objcopy --strip-all` of `pie`.
    let stripped: String
    /// `objcopy --only-keep-debug` of `pie`.
    let debugFile: String

    static let shared: Result<Fixture, any Error> = Result { try Fixture() }

    static func get() throws -> Fixture { try shared.get() }

    private init() throws {
        guard let cc = Tools.find("clang", "cc", "gcc") else { throw Tools.Failure(description: "no C compiler") }
        let objcopy = try Oracle.tool("objcopy")
        directory = try Scratch.directory("symbolication-fixture")
        let source = directory + "/prog.c"
        try programSource.write(toFile: source, atomically: true, encoding: .utf8)
        pie = directory + "/prog"
        nonPIE = directory + "/prog-nopie"
        noBuildID = directory + "/prog-noid"
        stripped = directory + "/prog-stripped"
        debugFile = directory + "/prog.debug"
        _ = try Tools.output(cc, ["-g", "-O1", "-fPIE", "-pie", "-Wl,--build-id=sha1", source, "-o", pie])
        _ = try Tools.output(cc, ["-g", "-O1", "-fno-pie", "-no-pie", "-Wl,--build-id=md5", source, "-o", nonPIE])
        _ = try Tools.output(cc, ["-g", "-O1", "-Wl,--build-id=none", source, "-o", noBuildID])
        _ = try Tools.output(objcopy, ["--strip-all", pie, stripped])
        _ = try Tools.output(objcopy, ["--only-keep-debug", pie, debugFile])
    }
}

/// What binutils say.
enum Oracle {
    static func tool(_ name: String) throws -> String {
        guard let path = Tools.find(name) else { throw Tools.Failure(description: "\(name) not found (binutils)") }
        return path
    }

    /// `readelf -n`: the "Build ID: <hex>" line, or nil when the file has none.
    static func buildID(_ path: String) throws -> String? {
        let text = try Tools.output(try tool("readelf"), ["-n", "-W", path])
        // "  GNU  0x00000014\tNT_GNU_BUILD_ID (unique build ID bitstring)\t    Build ID: 9f1c…"
        for line in text.split(separator: "\n") {
            if let range = line.range(of: "Build ID:") {
                return line[range.upperBound...].split(separator: " ").first.map(String.init)
            }
        }
        return nil
    }

    /// `readelf -lW`: VirtAddr of the first LOAD program header.
    static func firstLoadAddress(_ path: String) throws -> UInt64? {
        let text = try Tools.output(try tool("readelf"), ["-l", "-W", path])
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.first == "LOAD", fields.count > 2 { return UInt64(fields[2].dropFirst(2), radix: 16) }
        }
        return nil
    }

    /// `nm -S --defined-only`: text symbols' addresses and sizes.
    static func functions(_ path: String) throws -> [String: (address: UInt64, size: UInt64)] {
        let text = try Tools.output(try tool("nm"), ["-S", "--defined-only", path])
        var result: [String: (UInt64, UInt64)] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 4, fields[2] == "T" || fields[2] == "t",
                  let address = UInt64(fields[0], radix: 16), let size = UInt64(fields[1], radix: 16) else { continue }
            result[String(fields[3])] = (address, size)
        }
        return result
    }

    /// One source-level frame as addr2line prints it.
    struct Frame: Equatable, CustomStringConvertible {
        var function: String
        /// The file's last path component (addr2line prints it absolute, llvm-symbolizer relative).
        var file: String?
        var line: Int?
        var description: String { "\(function) \(file ?? "??"):\(line.map(String.init) ?? "?")" }
    }

    /// `addr2line -a -f -i -e path <offsets>`: for each offset, its inlined chain, innermost first.
    static func addr2line(_ path: String, _ offsets: [UInt64]) throws -> [[Frame]] {
        let text = try Tools.output(try tool("addr2line"), ["-a", "-f", "-i", "-e", path] + offsets.map { "0x" + String($0, radix: 16) })
        var result: [[Frame]] = []
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)[...]
        while let line = lines.first {
            lines = lines.dropFirst()
            if line.hasPrefix("0x"), UInt64(line.dropFirst(2), radix: 16) != nil {
                result.append([])
                continue
            }
            guard !line.isEmpty, !result.isEmpty, let location = lines.first else { continue }
            lines = lines.dropFirst()
            // "/dir/prog.c:10 (discriminator 2)", "/dir/prog.c:?", "??:0"
            let place = location.split(separator: " ").first.map(String.init) ?? location
            let colon = place.lastIndex(of: ":") ?? place.endIndex
            let file = String(place[..<colon])
            let number = colon < place.endIndex ? Int(place[place.index(after: colon)...]) : nil
            result[result.count - 1].append(Frame(function: line, file: file == "??" ? nil : (file as NSString).lastPathComponent,
                                                  line: number == 0 ? nil : number))
        }
        return result
    }
}
