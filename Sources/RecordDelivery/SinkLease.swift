// SinkLease.swift — one process's lease on a record, shared by its sinks.
//
// A sink sends a record only while its process holds the record's lease (RecordLease: an
// exclusive flock(2) on the file), so that several processes over one record directory send each
// record once. flock belongs to an open file, not to a process: a second sink of the same process
// (the Sentry sink and the OTLP sink both sending the record) would find the file locked and take
// itself for another process. So the sinks of a process share one RecordLease per record,
// counted, released with the last of them. Everything else that asks for the lease
// (RecordDirectoryBound, before it prunes a record) still finds it held.
import CrashRecordFormat
import Synchronization

/// A sink's hold on a record's lease (see the file comment).
package final class SinkLease: Sendable {
    private struct Held: @unchecked Sendable {
        // @unchecked: RecordLease is a file descriptor; it is only released under `held`'s lock.
        var lease: RecordLease
        var holders: Int
    }
    private static let held = Mutex<[String: Held]>([:])

    private let path: String
    private let released = Atomic<Bool>(false)

    /// The lease on the record at `path`, shared with the other sinks of this process holding it;
    /// nil when another process holds it, or the file is gone or not a regular file.
    package init?(path: String) {
        let taken: Bool = Self.held.withLock { held in
            if var entry = held[path] {
                entry.holders += 1
                held[path] = entry
                return true
            }
            guard let lease = RecordLease(path: path) else { return false }
            held[path] = Held(lease: lease, holders: 1)
            return true
        }
        guard taken else { return nil }
        self.path = path
    }

    /// Lets go of this sink's hold (once); the last holder's release releases the lease.
    package func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Self.held.withLock { held in
            guard var entry = held[path] else { return }
            entry.holders -= 1
            if entry.holders == 0 {
                entry.lease.release()
                held[path] = nil
            } else {
                held[path] = entry
            }
        }
    }

    deinit { release() }
}
