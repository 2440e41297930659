// DocsInStepTests.swift — the docs name what the code has: every environment variable, every product,
// every crash-inspect command and flag, both ways where a reader could be misled.
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class DocsInStepTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The text of every file under `directories` (relative to the root) whose name ends in one of `suffixes`.
    func text(of directories: [String], suffixes: [String]) throws -> String {
        var all = ""
        for directory in directories {
            let base = Self.root.appendingPathComponent(directory)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: base.path, isDirectory: &isDirectory) else { continue }
            if !isDirectory.boolValue { all += try String(contentsOf: base, encoding: .utf8); continue }
            let files = FileManager.default.enumerator(atPath: base.path)?.compactMap { $0 as? String } ?? []
            for file in files where suffixes.contains(where: file.hasSuffix) && !file.contains(".build") {
                all += (try? String(contentsOf: base.appendingPathComponent(file), encoding: .utf8)) ?? ""
            }
        }
        return all
    }

    func matches(_ pattern: String, in text: String) throws -> Set<String> {
        let expression = try NSRegularExpression(pattern: pattern)
        let range = NSRange(text.startIndex..., in: text)
        return Set(expression.matches(in: text, range: range).compactMap { Range($0.range, in: text).map { String(text[$0]) } })
    }

    var docs: String {
        get throws { try text(of: ["README.md", "CONTRIBUTING.md", "docs", "Sources"], suffixes: [".md"]) }
    }

    /// Every `CRASHCAPTURE_…` variable the docs name is one the code knows, and every one the code
    /// knows is in the docs (the header guard and the test support's own aside).
    func testEnvironmentVariablesInTheDocsAreTheCodes() throws {
        let code = try matches("CRASHCAPTURE_[A-Z_]+", in: try text(of: ["Sources", "CShims"], suffixes: [".swift", ".c", ".h"]))
            .subtracting(["CRASHCAPTURE_H", "CRASHCAPTURE_CHILD_RUN_TOKEN"])
        let documented = try matches("CRASHCAPTURE_[A-Z_]+", in: try docs)
        XCTAssertEqual(documented.subtracting(code).sorted(), [], "named in the docs, unknown to the code")
        XCTAssertEqual(code.subtracting(documented).sorted(), [], "read by the code, in no doc")
    }

    /// Every product the manifest declares is in the README (crash-harness is the tests' own).
    func testEveryProductIsInTheReadme() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let products = try matches("\\.(library|executable)\\(name: \"[^\"]+\"", in: manifest)
            .map { $0.split(separator: "\"")[1] }.map(String.init).filter { $0 != "crash-harness" }
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        XCTAssertFalse(products.isEmpty)
        for product in products { XCTAssertTrue(readme.contains(product), "\(product) is in no line of the README") }
        for trait in try matches("\\.trait\\(name: \"[^\"]+\"", in: manifest).map({ $0.split(separator: "\"")[1] }) {
            XCTAssertTrue(readme.contains("[\"\(trait)\"]") || readme.contains("`\(trait)`"), "trait \(trait) is in no line of the README")
        }
    }

    /// Every crash-inspect command and every flag of it (long or short form) is in the inspector's
    /// page, as `--help` prints them.
    func testEveryInspectorCommandAndFlagIsDocumented() throws {
        let page = try String(contentsOf: Self.root.appendingPathComponent("docs/inspector.md"), encoding: .utf8)
        func help(_ arguments: [String]) throws -> String {
            let out = try Scratch.directory("docs-help") + "/help"
            _ = try ChildProcess.run(BuiltProducts.inspect, arguments + ["--help"], stdout: out, timeout: 60)
            return (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        }
        let top = try help([])
        // A command's line starts with two spaces and its name; its description's further lines with more.
        let commands = top.components(separatedBy: "SUBCOMMANDS:").last?.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  "), !line.hasPrefix("   ") else { return nil }
            let word = line.split(separator: " ").first.map(String.init) ?? ""
            return word.allSatisfy({ $0.isLowercase || $0 == "-" }) && !word.isEmpty ? word : nil
        } ?? []
        XCTAssertGreaterThanOrEqual(commands.count, 5, top)
        for command in commands + ["symbols add"] {
            XCTAssertTrue(page.contains("crash-inspect \(command)"), "crash-inspect \(command) is not in docs/inspector.md")
            for line in try help(command.split(separator: " ").map(String.init)).split(separator: "\n") where line.hasPrefix("  -") {
                let forms = line.split(separator: " ").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ",")) }
                    .filter { $0.hasPrefix("-") && $0 != "-h" && $0 != "--help" }
                guard !forms.isEmpty else { continue }
                XCTAssertTrue(forms.contains { page.contains($0) }, "crash-inspect \(command) \(forms) is not in docs/inspector.md")
            }
        }
    }
}
