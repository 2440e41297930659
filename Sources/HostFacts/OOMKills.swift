// OOMKills.swift — whether the kernel's OOM killer ended a dead run: the `oom_kill` counter of the
// run's memory cgroup, read at start and again while the run lives, compared at the next launch.
//
// A SIGKILL runs no handler, so nothing in the dying process can say who sent it. The kernel
// counts, per memory cgroup, the processes its OOM killer killed there (the victim's own cgroup
// counts it, whether the limit hit was that cgroup's, an ancestor's or the whole machine's):
// cgroup v2 `memory.events.local` (Linux ≥ 5.2; `memory.events`, hierarchical, before that) and
// cgroup v1 `memory.oom_control` (Linux ≥ 4.13), each a line `oom_kill N`. The reporter finds the
// run's counter file once at start (/proc/self/cgroup names the cgroup, /proc/self/mountinfo where
// its hierarchy is mounted) and keeps the last reading in the run's marker (RunLedger: path,
// inode, count), read again every 2 s and written when it changed. A dead run is an OOM kill
// when the same file (same path and inode: the same cgroup, not one recreated at that path; same
// boot) now counts more kills than the marker's last reading. (The analytics store's older run
// rows hold a reading too, from before the reporter kept runs: they are judged the same way.)
//
// Reading while the run lives, not only at start, keeps a kill of another process in the same
// cgroup earlier in the run from being blamed on this run's death. What remains (CrashReporter.docc, "The next launch and its sinks", "OOM kills"):
// another process of the cgroup killed between the last refresh and the next launch makes a
// plain SIGKILL look like `oom`; a cgroup removed before the next launch (a container restarted
// into a new cgroup) loses the count, and the run stays `abnormal`.
//
// Reads are a few small open/read/close calls (SmallFile, no Foundation); any failure means
// "unknown", never an error, and the run is then reported `abnormal` (not OOM-killed) as before.

/// One reading of a memory cgroup's OOM-kill counter.
package struct OOMKillReading: Sendable, Equatable {
    /// The counter file (`…/memory.events.local`, `…/memory.events` or `…/memory.oom_control`).
    package var path: String
    /// The file's inode: cgroupfs gives every cgroup's files new inode numbers, so a cgroup removed
    /// and created again at the same path is told apart from the one the run was in.
    package var inode: UInt64
    /// Processes the OOM killer killed in that cgroup so far (`oom_kill`).
    package var kills: Int64

    package init(path: String, inode: UInt64, kills: Int64) {
        self.path = path
        self.inode = inode
        self.kills = kills
    }
}

/// Finds, reads and compares memory cgroup OOM-kill counters.
package enum OOMKillCounter {
    /// The counter file of this process's memory cgroup, or `nil` when there is none this code can
    /// read (no memory controller, the root cgroup of v2, an old kernel, /proc or cgroupfs not
    /// mounted or not readable).
    package static func locate() -> String? {
        guard let cgroups = SmallFile.text("/proc/self/cgroup", limit: 64 << 10)?.text,
              let mounts = SmallFile.text("/proc/self/mountinfo", limit: 4 << 20)?.text else { return nil }
        return candidates(procCgroup: cgroups, mountinfo: mounts).first { read($0) != nil }
    }

    /// Reads the counter at `path`; `nil` when the file cannot be read or has no `oom_kill` line.
    package static func read(_ path: String) -> OOMKillReading? {
        guard let file = SmallFile.text(path, limit: 4 << 10), let kills = oomKills(in: file.text) else { return nil }
        return OOMKillReading(path: path, inode: file.inode, kills: kills)
    }

    /// The names a counter file has (a marker's path naming anything else is not opened).
    static let counterFileNames: Set<Substring> = ["memory.oom_control", "memory.events.local", "memory.events"]

    /// Whether the OOM killer ended a dead run, given its marker's last reading: true when the same
    /// counter file (same path and inode, same boot) now counts more kills; false otherwise,
    /// including every case where it cannot be told. The marker is untrusted: only an absolute path
    /// to a file named as a counter is read.
    package static func killedByOOM(recorded: OOMKillReading?, sameBoot: Bool, now: (String) -> OOMKillReading? = read) -> Bool {
        guard let recorded, sameBoot, recorded.path.hasPrefix("/"),
              let name = recorded.path.split(separator: "/").last, counterFileNames.contains(name),
              let current = now(recorded.path), current.inode == recorded.inode else { return false }
        return current.kills > recorded.kills
    }

    // MARK: - Parsing (pure, on untrusted text: garbage yields nil or nothing)

    /// The value of the `oom_kill` line (v1 `memory.oom_control`, v2 `memory.events[.local]`);
    /// other keys (`oom`, `oom_group_kill`, `oom_kill_disable`) are not it.
    static func oomKills(in text: String) -> Int64? {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count == 2, fields[0] == "oom_kill", let value = Int64(fields[1]), value >= 0 { return value }
        }
        return nil
    }

    /// One line of /proc/self/cgroup: `hierarchy-ID:controller-list:cgroup-path`.
    struct Membership: Equatable {
        var hierarchy: Int
        var controllers: [String]
        var path: String
    }

    static func parseProcCgroup(_ text: String) -> [Membership] {
        text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, let hierarchy = Int(parts[0]), parts[2].hasPrefix("/") else { return nil }
            let controllers = parts[1].split(separator: ",").map(String.init)
            return Membership(hierarchy: hierarchy, controllers: controllers, path: String(parts[2]))
        }
    }

    /// A cgroup filesystem mount from /proc/self/mountinfo.
    struct Mount: Equatable {
        /// The directory of the hierarchy that is mounted (field 4).
        var root: String
        var mountPoint: String
        /// `cgroup` (v1) or `cgroup2`.
        var fileSystem: String
        /// The super options (v1: the controllers bound to the hierarchy, among others).
        var superOptions: [String]
    }

    /// The cgroup and cgroup2 mounts in /proc/self/mountinfo
    /// (`id parent major:minor root mount-point options [optional…] - fstype source super-options`).
    static func parseMountinfo(_ text: String) -> [Mount] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // Optional fields (zero or more) end with a lone "-", at index 6 or later.
            guard fields.count > 6, let dash = fields[6...].firstIndex(of: "-"), dash + 3 < fields.count else { return nil }
            let fileSystem = String(fields[dash + 1])
            guard fileSystem == "cgroup" || fileSystem == "cgroup2" else { return nil }
            return Mount(root: unescape(fields[3]), mountPoint: unescape(fields[4]), fileSystem: fileSystem,
                         superOptions: fields[dash + 3].split(separator: ",").map(String.init))
        }
    }

    /// mountinfo writes space, tab, newline and backslash as `\ooo` octal.
    static func unescape(_ field: Substring) -> String {
        guard field.contains("\\") else { return String(field) }
        let utf8 = Array(field.utf8)
        var bytes: [UInt8] = []
        var index = 0
        func octal(_ byte: UInt8) -> UInt8? { (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(byte) ? byte - UInt8(ascii: "0") : nil }
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "\\"), index + 3 < utf8.count,
               let high = octal(utf8[index + 1]), high <= 3, let middle = octal(utf8[index + 2]), let low = octal(utf8[index + 3]) {
                bytes.append(high << 6 | middle << 3 | low)
                index += 4
            } else {
                bytes.append(utf8[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The counter files to try, best first: the v1 memory hierarchy's `memory.oom_control` when
    /// the memory controller is bound to v1 (then the v2 tree has no memory files), else the v2
    /// cgroup's `memory.events.local`, then `memory.events`.
    package static func candidates(procCgroup: String, mountinfo: String) -> [String] {
        let memberships = parseProcCgroup(procCgroup)
        let mounts = parseMountinfo(mountinfo)
        var files: [String] = []
        if let v1 = memberships.first(where: { $0.hierarchy != 0 && $0.controllers.contains("memory") }) {
            for mount in mounts where mount.fileSystem == "cgroup" && mount.superOptions.contains("memory") {
                if let directory = directory(of: v1.path, in: mount) { files.append(directory + "/memory.oom_control") }
            }
        }
        if let v2 = memberships.first(where: { $0.hierarchy == 0 && $0.controllers.isEmpty }) {
            for mount in mounts where mount.fileSystem == "cgroup2" {
                if let directory = directory(of: v2.path, in: mount) {
                    files.append(directory + "/memory.events.local")
                    files.append(directory + "/memory.events")
                }
            }
        }
        return files
    }

    /// Where cgroup `path` appears under `mount`, or `nil` when the mount does not show it (a
    /// mount of another subtree, a path outside this cgroup namespace such as `/../x`).
    static func directory(of path: String, in mount: Mount) -> String? {
        guard !path.split(separator: "/").contains(".."), !mount.mountPoint.isEmpty else { return nil }
        let root = mount.root == "/" ? "" : mount.root
        let relative: Substring
        if path == mount.root { relative = "" }
        else if root.isEmpty { relative = path == "/" ? "" : path[...] }
        else if path.hasPrefix(root + "/") { relative = path.dropFirst(root.count) }
        else { return nil }
        let base = mount.mountPoint == "/" ? "" : mount.mountPoint
        return base + relative
    }
}
