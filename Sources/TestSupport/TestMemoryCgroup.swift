// TestMemoryCgroup.swift — a memory-limited cgroup for one test: the OOM-kill tests and the tests
// of what a crash record says of its cgroup's memory.
import Foundation
import HostFacts
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A cgroup v1 memory cgroup made for one test under this process's own (found as the tracker
/// finds it, ``OOMKillCounter``), with a memory limit; ``remove()`` deletes it.
package struct TestMemoryCgroup {
    package let directory: String

    /// - Throws: `XCTSkip` saying why when this machine cannot give a test a memory cgroup.
    package init(_ name: String, limitBytes: Int) throws {
        guard getuid() == 0 else { throw XCTSkip("making a memory cgroup needs root (uid \(getuid()))") }
        let cgroups = (try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)) ?? ""
        let mounts = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        guard let own = OOMKillCounter.candidates(procCgroup: cgroups, mountinfo: mounts).first(where: { $0.hasSuffix("/memory.oom_control") })
        else {
            throw XCTSkip("no cgroup v1 memory hierarchy mounted (these tests make v1 memory cgroups); /proc/self/cgroup: \(cgroups)")
        }
        directory = (own as NSString).deletingLastPathComponent + "/crashcapture-test-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard mkdir(directory, 0o755) == 0 else {
            throw XCTSkip("cannot make a memory cgroup at \(directory): \(String(cString: strerror(errno)))")
        }
        guard OOMKillCounter.read(directory + "/memory.oom_control") != nil else {
            remove()
            throw XCTSkip("\(directory)/memory.oom_control has no oom_kill line (Linux before 4.13)")
        }
        guard Self.write("\(limitBytes)", to: directory + "/memory.limit_in_bytes") else {
            let reason = String(cString: strerror(errno))
            remove()
            throw XCTSkip("cannot limit the memory of \(directory): \(reason)")
        }
    }

    /// The cgroup's `oom_kill` count now.
    package func oomKills() -> Int64? { OOMKillCounter.read(directory + "/memory.oom_control")?.kills }

    /// What starts a process inside the cgroup (``Harness``'s `launcher`): a shell joins it, then execs the rest.
    package var launcher: [String] { ["/bin/sh", "-c", "echo $$ > \"$0\" && exec \"$@\"", directory + "/cgroup.procs"] }

    /// Removes the cgroup (its processes have all been waited for; the kernel may take a moment to let go).
    package func remove() {
        for _ in 0..<100 {
            if rmdir(directory) == 0 || errno == ENOENT { return }
            usleep(20_000)
        }
        XCTFail("could not remove the test cgroup \(directory): \(String(cString: strerror(errno)))")
    }

    package static func write(_ text: String, to path: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return text.withCString { Glibc.write(fd, $0, strlen($0)) } == text.utf8.count
    }
}
