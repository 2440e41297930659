// KilledRun.swift — a run that was killed while a hang it had recorded was still open (a
// liveness probe's SIGKILL, the end of a grace period, the OOM killer) becomes a record of its
// own at the next launch: the hang record the run kept in the ledger (RunLedger.holdHang), with
// a `CC_SEC_FATE` section that says it was killed and how long after. It goes to the sinks
// through the inbox like every record, so each sink gets it once and a sink that is down gets it
// at a later launch; the ledger's copy is deleted once the record is in the directory.
import CrashRecordFormat
import HostFacts
import RecordDelivery
#if canImport(Glibc)
import Glibc
#endif

enum KilledRun {
    /// The fatal record of `outcome` (killed) made from the hang or memory record kept at
    /// `held`: written into `directory` under that record's time and pid with tid 0, and its name
    /// returned; or why it could not be. The kept record is untrusted like any file of the
    /// directory (read without following links, bounded, parsed strictly).
    static func revive(_ held: String, outcome: EndedRun, into directory: String, sizeLimit: Int) -> Result<String, Refusal> {
        let bytes: [UInt8]
        let record: CrashRecord
        do {
            bytes = try CrashRecordReader.readBytes(path: held, sizeLimit: sizeLimit)
            record = try CrashRecordReader.parse(bytes)
        } catch {
            return .failure(Refusal(description: "the kept record: \(error)"))
        }
        guard let process = record.process, process.crashWallNanoseconds > 0, process.pid > 0 else {
            return .failure(Refusal(description: "the kept record names no process and time"))
        }
        guard record.runID == nil || record.runID == outcome.runID else {
            return .failure(Refusal(description: "the kept record is of another run"))
        }
        let recordMilliseconds = process.crashWallNanoseconds / 1_000_000
        var oom = false
        if case .killed(let byOOM) = outcome.end { oom = byOOM }
        let fate = RecordFate(oom: oom, lastSeenWallMilliseconds: outcome.lastSeen?.wallMilliseconds,
                              lastSeenAfterMilliseconds: outcome.lastSeen.flatMap { $0.wallMilliseconds > recordMilliseconds ? $0.wallMilliseconds - recordMilliseconds : nil })
        let amended: [UInt8]
        do { amended = try fate.added(to: bytes) } catch { return .failure(Refusal(description: "the kept record: \(error)")) }
        let name = RecordFileName(milliseconds: recordMilliseconds, pid: process.pid, tid: 0).name
        let target = directory + "/" + name
        // Made once: a launch that made it and died before the ledger's copy was deleted finds it.
        if access(target, F_OK) == 0 { return .success(name) }
        guard SmallFile.replace(target, with: amended) else {
            return .failure(Refusal(description: "\(target): \(String(cString: strerror(errno == 0 ? EIO : errno)))"))
        }
        return .success(name)
    }

    /// The fatal record of `outcome`, killed by the OOM killer with no memory record kept: made
    /// from the ledger (``RecordFate/killedRunRecord(pid:startWallMilliseconds:appName:appVersion:runID:)``)
    /// and written into `directory` under the last sighting's time and the pid, tid 0; its name.
    static func fromLedger(_ outcome: EndedRun, into directory: String) -> Result<String, Refusal> {
        let fate = RecordFate(oom: true, lastSeenWallMilliseconds: outcome.lastSeen?.wallMilliseconds, lastSeenAfterMilliseconds: nil)
        let bytes = fate.killedRunRecord(pid: outcome.pid, startWallMilliseconds: outcome.startWallMilliseconds, appName: outcome.appName,
                                         appVersion: outcome.appVersion, runID: outcome.runID)
        let name = RecordFileName(milliseconds: outcome.lastSeen?.wallMilliseconds ?? outcome.startWallMilliseconds, pid: outcome.pid, tid: 0).name
        let target = directory + "/" + name
        if access(target, F_OK) == 0 { return .success(name) }
        guard SmallFile.replace(target, with: bytes) else {
            return .failure(Refusal(description: "\(target): \(String(cString: strerror(errno == 0 ? EIO : errno)))"))
        }
        return .success(name)
    }

    struct Refusal: Error, CustomStringConvertible {
        let description: String
    }
}
