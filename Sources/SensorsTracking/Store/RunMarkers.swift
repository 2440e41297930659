// RunMarkers.swift — the `runs` table: one marker per live (or unreported) process.
package import HostFacts
package import SensorsEvents

/// One process's run marker: stored with its `$AppStart`, removed with its `$AppEnd`. Its refresh
/// clocks are its start's (how long a run lived is the reporter's run ledger's to say); a row an
/// older version refreshed keeps what it has.
package struct RunMarker: Sendable, Equatable {
    package var runID: String
    package var process: ProcessIdentity
    package var startWallMilliseconds: Int64
    package var startMonotonicNanoseconds: Int64
    package var refreshWallMilliseconds: Int64
    package var refreshMonotonicNanoseconds: Int64
    package var appName: String
    package var appVersion: String
    package var identity: EventIdentity
    /// The last reading of the run's memory cgroup OOM-kill counter (at start, then at each
    /// refresh); `nil` when the run could not read one, and in markers of schema version 1.
    package var oomKills: OOMKillReading?

    package init(runID: String, process: ProcessIdentity, startWallMilliseconds: Int64, startMonotonicNanoseconds: Int64,
                refreshWallMilliseconds: Int64, refreshMonotonicNanoseconds: Int64, appName: String, appVersion: String,
                identity: EventIdentity, oomKills: OOMKillReading? = nil) {
        self.runID = runID
        self.process = process
        self.startWallMilliseconds = startWallMilliseconds
        self.startMonotonicNanoseconds = startMonotonicNanoseconds
        self.refreshWallMilliseconds = refreshWallMilliseconds
        self.refreshMonotonicNanoseconds = refreshMonotonicNanoseconds
        self.appName = appName
        self.appVersion = appVersion
        self.identity = identity
        self.oomKills = oomKills
    }

    /// Seconds the run is known to have lived (monotonic, start to last refresh).
    package var knownDurationSeconds: Double {
        Double(max(0, refreshMonotonicNanoseconds - startMonotonicNanoseconds)) / 1e9
    }
}

extension TrackingStore {
    /// Stores the marker of a run that has just started.
    func registerRun(_ marker: RunMarker) throws {
        try write { db in try Self.insertRun(db, marker) }
    }

    /// Stores (or replaces) a run's marker within the caller's transaction.
    static func insertRun(_ db: Database, _ marker: RunMarker) throws {
        try db.execute(sql: """
            INSERT OR REPLACE INTO runs(run_id, pid, boot_id, start_ticks, start_wall_ms, start_mono_ns, refresh_wall_ms,
                refresh_mono_ns, app_name, app_version, anonymous_id, login_id, oom_counter_path, oom_counter_inode,
                oom_kills) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
            """, arguments: [marker.runID, marker.process.pid, marker.process.bootID, marker.process.startTicks,
                             marker.startWallMilliseconds, marker.startMonotonicNanoseconds, marker.refreshWallMilliseconds,
                             marker.refreshMonotonicNanoseconds, marker.appName, marker.appVersion,
                             marker.identity.anonymousID, marker.identity.loginID, marker.oomKills?.path,
                             // SQLite integers are signed 64-bit: the inode's bits, kept as they are.
                             marker.oomKills.map { Int64(bitPattern: $0.inode) }, marker.oomKills?.kills])
    }

    /// Updates the identity a run's synthesized `$AppEnd` would carry.
    func updateRunIdentity(_ runID: String, identity: EventIdentity) throws {
        try write { db in
            try db.execute(sql: "UPDATE runs SET anonymous_id = ?, login_id = ? WHERE run_id = ?",
                           arguments: [identity.anonymousID, identity.loginID, runID])
        }
    }

    /// Every run marker in the store, once the journal is folded in: a run that ended since this
    /// process opened the store may have its end there, and must not be taken for one that did not.
    package func runMarkers() throws -> [RunMarker] {
        try foldJournal()
        return try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM runs ORDER BY start_wall_ms").map { row in
                RunMarker(runID: row["run_id"],
                          process: ProcessIdentity(pid: row["pid"], bootID: row["boot_id"], startTicks: row["start_ticks"]),
                          startWallMilliseconds: row["start_wall_ms"], startMonotonicNanoseconds: row["start_mono_ns"],
                          refreshWallMilliseconds: row["refresh_wall_ms"], refreshMonotonicNanoseconds: row["refresh_mono_ns"],
                          appName: row["app_name"], appVersion: row["app_version"],
                          identity: EventIdentity(anonymousID: row["anonymous_id"], loginID: row["login_id"]),
                          oomKills: Self.oomKillReading(row))
            }
        }
    }

    /// The marker's OOM-kill reading: all three columns, or none (schema version 1 rows, runs without a counter).
    private static func oomKillReading(_ row: Row) -> OOMKillReading? {
        guard let path = row["oom_counter_path"] as String?, let inode = row["oom_counter_inode"] as Int64?,
              let kills = row["oom_kills"] as Int64? else { return nil }
        return OOMKillReading(path: path, inode: UInt64(bitPattern: inode), kills: kills)
    }

    static func runExists(_ db: Database, _ runID: String) throws -> Bool {
        try Int.fetchOne(db, sql: "SELECT 1 FROM runs WHERE run_id = ?", arguments: [runID]) != nil
    }

    static func deleteRun(_ db: Database, _ runID: String) throws {
        try db.execute(sql: "DELETE FROM runs WHERE run_id = ?", arguments: [runID])
    }

    static func runCount(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runs") ?? 0
    }
}

extension OOMKillCounter {
    /// How a dead run ended, given its marker's last reading: `.oom` when the OOM killer ended it
    /// (``OOMKillCounter/killedByOOM(recorded:sameBoot:now:)``), `.abnormal` otherwise.
    static func endReason(recorded: OOMKillReading?, sameBoot: Bool, now: (String) -> OOMKillReading? = OOMKillCounter.read) -> AppEndReason {
        killedByOOM(recorded: recorded, sameBoot: sameBoot, now: now) ? .oom : .abnormal
    }
}
