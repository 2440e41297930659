// Threads.swift — the threads the reporter starts (the senders, the launch) and the waits
// between them, without Foundation: Foundation's Thread and NSCondition would make every program
// that links the reporter load libFoundation and ICU.
//
// Here, in the module of the sending thread (UploadWorker), because it is the lowest one that
// every module starting such a thread already depends on.
#if canImport(Glibc)
import Glibc
#endif

/// Threads of the operating system, named as `top -H`, `ps -L`, gdb and /proc show them.
package enum OSThread {
    /// Starts a detached thread named `name` (see ``name(_:)``) that runs `body`, with the
    /// system's default stack size (as Foundation's `Thread`). Returns false when the system
    /// refuses a thread (pthread_create's EAGAIN): `body` then never runs.
    @discardableResult
    package static func start(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        let context = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            OSThread.name(start.name)
            start.body()
            return nil
        }, context)
        guard started == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            return false
        }
        // Nobody joins it: its resources go back to the system when it returns.
        pthread_detach(thread)
        return true
    }

    /// What a new thread runs, handed to it through pthread_create's argument.
    private final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// Names the calling thread in the kernel (what /proc/<pid>/task/<tid>/comm holds): at most
    /// 15 bytes are kept.
    package static func name(_ name: String) {
        // pthread_setname_np is not visible to Swift through Glibc; this is what it does on Linux.
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }
}

/// A lock with a condition to wait on, as NSCondition, but whose timed waits end at an instant
/// of `SuspendingClock` (CLOCK_MONOTONIC on Linux): a change of the wall clock neither cuts a
/// wait short nor stretches it. A pthread mutex and condition variable rather than the standard
/// library's `Mutex`, which has no condition to wait on; use `Mutex` wherever nothing waits.
// @unchecked: the pthread objects are made for use from several threads; they live at fixed
// addresses (allocated here, freed in deinit) as pthreads require.
package final class ConditionLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init")
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        defer { pthread_condattr_destroy(&attributes) }
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        precondition(pthread_cond_init(condition, &attributes) == 0, "pthread_cond_init")
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }

    package func unlock() { pthread_mutex_unlock(mutex) }

    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Wakes every waiter. Call with the lock held.
    package func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits until woken (or spuriously). Call with the lock held; it is held again on return.
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits until woken (or spuriously) or `deadline` passes. Call with the lock held; it is
    /// held again on return. Returns false when the deadline passed.
    @discardableResult
    package func wait(until deadline: SuspendingClock.Instant) -> Bool {
        let (seconds, attoseconds) = SuspendingClock.now.duration(to: deadline).components
        guard seconds > 0 || (seconds == 0 && attoseconds > 0) else { return false }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        // At most about three years ahead: far enough for any wait here, and no overflow.
        let wait = min(seconds, 100_000_000)
        var nanoseconds = Int(now.tv_nsec) + Int(attoseconds / 1_000_000_000)
        var whole = Int(now.tv_sec) + Int(wait)
        if nanoseconds >= 1_000_000_000 {
            nanoseconds -= 1_000_000_000
            whole += 1
        }
        var end = timespec(tv_sec: whole, tv_nsec: nanoseconds)
        return pthread_cond_timedwait(condition, mutex, &end) != ETIMEDOUT
    }
}
