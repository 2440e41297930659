// LockWaits.swift — which lock each blocked thread waits on and which thread holds it (the C
// core's cc_lock_waits, cc_locks.c), the deadlocks among them, and the section a hang or snapshot
// record carries (CC_SEC_LOCK_WAITS). Ordinary code, on the hang watcher's thread.
import CShims

package enum LockWaits {
    /// The most waits a record keeps (72 bytes each).
    static let capacity = 2048

    /// Every other thread's futex wait, with its lock and holder where the lock says.
    static func read(excluding me: Int32 = cc_current_tid()) -> [cc_lock_wait_t] {
        [cc_lock_wait_t](unsafeUninitializedCapacity: capacity) { buffer, count in
            count = Int(cc_lock_waits(buffer.baseAddress, UInt32(capacity), me))
        }
    }

    /// What the hang watcher does each tick, for a benchmark: every thread's lock wait read and
    /// the deadlocks among them found; how many of each.
    package static func scan() -> (waits: Int, cycles: Int) {
        let waits = read()
        return (waits.count, cycles(in: waits).count)
    }

    /// The deadlocks among `waits`: each a cycle of threads, every one waiting on a lock the next
    /// one holds (the last on one the first holds; one thread alone waits on a lock it holds). Given
    /// as indices into `waits`, each cycle starting at its lowest thread id, the cycles in the
    /// order of those ids, so the same deadlock always reads the same. A holder the lock names but
    /// that has ended, or a lock found free, is no edge.
    static func cycles(in waits: [(tid: Int32, holder: Int32?)]) -> [[Int]] {
        var index: [Int32: Int] = [:]
        for (position, wait) in waits.enumerated() { index[wait.tid] = position }
        let next: [Int?] = waits.map { wait in wait.holder.flatMap { index[$0] } }
        // Each thread waits on one lock, so each has at most one edge: walk from every thread,
        // colouring the walk; a walk that meets its own colour closed a cycle.
        var colour = [Int](repeating: -1, count: waits.count)
        var found: [[Int]] = []
        for start in waits.indices where colour[start] == -1 {
            var at: Int? = start
            var path: [Int] = []
            while let current = at, colour[current] == -1 {
                colour[current] = start
                path.append(current)
                at = next[current]
            }
            guard let current = at, colour[current] == start, let first = path.firstIndex(of: current) else { continue }
            var cycle = Array(path[first...])
            let lowest = cycle.indices.min { waits[cycle[$0]].tid < waits[cycle[$1]].tid }!
            cycle = Array(cycle[lowest...] + cycle[..<lowest])
            found.append(cycle)
        }
        return found.sorted { waits[$0[0]].tid < waits[$1[0]].tid }
    }

    static func cycles(in waits: [cc_lock_wait_t]) -> [[Int]] {
        cycles(in: waits.map { wait in
            (wait.tid, wait.holder_tid > 0 && wait.flags & (CC_LOCK_HOLDER_GONE | CC_LOCK_RELEASED | CC_LOCK_UNREADABLE) == 0 ? wait.holder_tid : nil)
        })
    }

    /// A cycle's identity: each thread and the lock it waits on.
    static func key(_ cycle: [Int], in waits: [cc_lock_wait_t]) -> String {
        cycle.map { "\(waits[$0].tid)@\(waits[$0].lock_address)" }.joined(separator: ",")
    }

    /// CC_SEC_LOCK_WAITS's payload: `cycle`'s threads first, in order, then the other waits.
    static func section(_ waits: [cc_lock_wait_t], cycle: [Int]) -> [UInt8] {
        let inCycle = Set(cycle)
        let ordered = cycle.map { waits[$0] } + waits.indices.filter { !inCycle.contains($0) }.map { waits[$0] }
        var header = cc_sec_lock_waits_t()
        header.count = UInt32(ordered.count)
        header.cycle_length = UInt32(cycle.count)
        return withUnsafeBytes(of: header) { Array($0) } + ordered.withUnsafeBytes { Array($0) }
    }
}
