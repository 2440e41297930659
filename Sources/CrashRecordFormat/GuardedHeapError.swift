// GuardedHeapError.swift — what a record's CC_SEC_GUARDED_HEAP says: a memory error the guarded
// heap (product CrashCaptureGuardedHeap) caught in one of its sampled allocations, with the
// allocation's and, once freed, the free's stacks.
import CCrashRecordLayout

/// A memory error in a guarded allocation: which, where, and who allocated and freed it.
package struct GuardedHeapError: Sendable, Equatable {
    /// The kind of error, in AddressSanitizer's words (`heap-use-after-free`, …).
    package enum Kind: Sendable, Equatable {
        case useAfterFree, bufferOverflow, bufferUnderflow, doubleFree, invalidFree
        /// An access to the pool that no allocation explains (a wild pointer).
        case unknown
        /// A kind this reader does not know (a newer writer's).
        case other(UInt32)

        init(_ raw: UInt32) {
            switch raw {
            case CC_GH_USE_AFTER_FREE.rawValue: self = .useAfterFree
            case CC_GH_BUFFER_OVERFLOW.rawValue: self = .bufferOverflow
            case CC_GH_BUFFER_UNDERFLOW.rawValue: self = .bufferUnderflow
            case CC_GH_DOUBLE_FREE.rawValue: self = .doubleFree
            case CC_GH_INVALID_FREE.rawValue: self = .invalidFree
            case CC_GH_UNKNOWN.rawValue: self = .unknown
            default: self = .other(raw)
            }
        }

        /// AddressSanitizer's name for it (what a developer searches for).
        package var name: String {
            switch self {
            case .useAfterFree: "heap-use-after-free"
            case .bufferOverflow: "heap-buffer-overflow"
            case .bufferUnderflow: "heap-buffer-underflow"
            case .doubleFree: "double-free"
            case .invalidFree: "invalid-free"
            case .unknown: "wild-access"
            case .other(let raw): "guarded-heap-error-\(raw)"
            }
        }
    }

    package var kind: Kind
    /// The faulting address, or the pointer given to free.
    package var accessAddress: UInt64
    /// The allocation's first byte and the size asked for (nil when no allocation explains it).
    package var allocation: (address: UInt64, size: UInt64)? {
        allocationSize == 0 && allocationAddress == 0 ? nil : (allocationAddress, allocationSize)
    }
    package var allocationAddress: UInt64
    package var allocationSize: UInt64
    /// Where the access lies from the allocation's first byte (negative: before it).
    package var offset: Int64? { allocation.map { Int64(bitPattern: accessAddress &- $0.address) } }
    /// The thread that allocated, and its stack (return addresses, innermost first).
    package var allocationThread: Int32
    package var allocationFrames: [UInt64]
    /// The thread that freed it and its stack, when it was freed.
    package var freeThread: Int32?
    package var freeFrames: [UInt64]

    /// What it did, after its kind: "a 48-byte allocation, access at offset 24" (Sentry's exception value).
    package var detail: String {
        guard let allocation else { return "no allocation at 0x" + String(accessAddress, radix: 16) }
        switch kind {
        case .doubleFree: return "a \(allocation.size)-byte allocation, freed twice"
        case .invalidFree: return "a \(allocation.size)-byte allocation, freed at offset \(offset ?? 0)"
        default: return "a \(allocation.size)-byte allocation, access at offset \(offset ?? 0)"
        }
    }

    /// The allocator's own functions, which a stack's site skips (malloc and its kin, the Swift
    /// runtime's, the guarded heap's).
    package static let allocatorFunctions: Set<String> = [
        "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign", "aligned_alloc", "memalign",
        "swift_slowAlloc", "swift_slowDealloc", "swift_allocObject", "swift_deallocObject", "swift_release", "_swift_release_dealloc",
        "cc_guarded_heap_allocate", "cc_guarded_heap_free", "operator new(unsigned long)", "operator delete(void*)",
    ]

    /// Where a stack happened, for grouping: the first of `names` (innermost first) that is not
    /// the allocator's own; nil when there is none.
    package static func site(_ names: [String?]) -> String? {
        names.lazy.compactMap { $0 }.first { name in
            !allocatorFunctions.contains(name) && !allocatorFunctions.contains(where: { name.hasPrefix($0 + "(") })
        }
    }

    /// One line: "heap-use-after-free of a 48-byte allocation (access at offset 24)".
    package var summary: String {
        guard let allocation else { return kind.name + " at 0x" + String(accessAddress, radix: 16) }
        let what = kind.name + " of a \(allocation.size)-byte allocation"
        switch kind {
        case .doubleFree: return what
        case .invalidFree: return what + " (free at offset \(offset ?? 0))"
        default: return what + " (access at offset \(offset ?? 0))"
        }
    }
}
