// ProcessIdentityTests.swift — `/proc/<pid>/stat` read as bytes: a command name with spaces and
// parentheses, a zombie, a process that is gone.
import HostFacts
import Foundation
import TestSupport
import XCTest

final class ProcessIdentityTests: XCTestCase {
    /// Spawns `path` with `arguments`, not reaped.
    func spawn(_ path: String, _ arguments: [String]) throws -> pid_t {
        var pid: pid_t = 0
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        XCTAssertEqual(posix_spawn(&pid, path, nil, nil, argv, environ), 0)
        return pid
    }

    func testStartTicksAndStateComeFromTheFieldsAfterTheCommandName() throws {
        // A command name that holds ") " and looks like more fields.
        let directory = try Scratch.directory("proc-stat")
        let odd = directory + "/a) b 7 c"
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: "/bin/sleep"))
        try FileManager.default.copyItem(atPath: "/bin/sleep", toPath: odd)
        let pid = try spawn(odd, ["30"])
        defer { kill(pid, SIGKILL); var status: Int32 = 0; waitpid(pid, &status, 0) }
        var text = ""
        for _ in 0..<200 {
            text = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            if text.contains("(a) b 7 c)") { break }
            usleep(5_000)
        }
        XCTAssertTrue(text.contains("(a) b 7 c)"), text)
        // Independently: the fields after the last ')'; starttime is field 22.
        let after = text[text.index(after: text.lastIndex(of: ")")!)...].split(separator: " ")
        XCTAssertEqual(ProcessIdentity.startTicks(of: pid), Int64(after[19]))
        XCTAssertFalse(ProcessIdentity.isZombie(pid))
    }

    func testAnExitedChildIsAZombieUntilReapedAndThenHasNoStartTime() throws {
        let pid = try spawn("/bin/true", [])
        var zombie = false
        for _ in 0..<400 where !zombie {
            zombie = ProcessIdentity.isZombie(pid)
            if !zombie { usleep(5_000) }
        }
        XCTAssertTrue(zombie, "an exited child not reaped is a zombie")
        var status: Int32 = 0
        XCTAssertEqual(waitpid(pid, &status, 0), pid)
        XCTAssertNil(ProcessIdentity.startTicks(of: pid))
        XCTAssertFalse(ProcessIdentity.isZombie(pid))
    }
}
