// BlockingWait.swift — a blocking wait made awaitable without holding a thread of Swift's pool.
import Dispatch

/// Runs blocking waits (a store's commit, an upload's deadline) for async callers.
enum BlockingWait {
    /// Runs `body` on a dispatch worker and resumes the caller with its result, so that a
    /// cooperative-pool thread is never held by a disk or network wait, and no thread is started
    /// per call (libdispatch keeps its workers).
    static func offload<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            waits.async { continuation.resume(returning: body()) }
        }
    }

    /// Where ``offload(_:)`` waits: concurrent, so that one wait never holds up another.
    private static let waits = DispatchQueue(label: "CrashCapture.wait", attributes: .concurrent)
}
