// CrashRecord.swift — the typed model of one crash record, as read by `CrashRecordReader`.
//
// The on-disk layout lives in Sources/CCrashRecordLayout/include/cc_record.h; this file only describes what a
// reader makes of it. Every type here is a plain value: `Sendable`, `Equatable`, and free of
// any reference to the bytes it came from.
//
// Public is what a tool of one's own reading records needs (a small surface a reader can hold:
// scripts/public-surface.sh counts it with the other products'): the signal, process, threads and
// frames, images and build-ids, messages, breadcrumbs, registers, memory. The rest is `package`,
// for this package's own modules: initializers, raw layout values (architecture and level numbers,
// `si_code`, the monotonic clocks), the async context chains and tasks (read only with symbols,
// CrashSymbolication's `ThreadFrames`), and the conveniences only those modules call.
import CCrashRecordLayout

/// One crash record: what the signal handler wrote about a process that died.
///
/// A record may be incomplete (the handler itself crashed, the disk filled, the machine lost
/// power); it then holds every section written before the cut, and `completeness` says why
/// it stops where it does.
public struct CrashRecord: Sendable, Equatable {
    /// The record format version from the file header (1 ... `CC_RECORD_VERSION`).
    package var version: Int
    /// The CPU architecture of the crashed process, from the file header.
    public var architecture: Architecture
    /// Whether the record ends with its end section, and if not, why not.
    public var completeness: Completeness
    /// The signal that killed the process, if the record got that far.
    public var signal: SignalInfo?
    /// Identity and clocks of the crashed process.
    public var process: CrashedProcess?
    /// The application's name, as configured when CrashCapture was installed.
    public var appName: String?
    /// The application's version, as configured when CrashCapture was installed.
    public var appVersion: String?
    /// The path of the crashed executable.
    public var executablePath: String?
    /// The Swift runtime's fatal-error message, when the crash was a `fatalError` or a trap
    /// with a message.
    public var fatalMessage: String?
    /// What the Swift runtime reported before this crash that is not the crash's message
    /// (`CC_STR_RUNTIME_WARNINGS`): its warnings, such as a leaked `CheckedContinuation`'s
    /// "SWIFT TASK CONTINUATION MISUSE: …", one a line, oldest first, as the record keeps them (at
    /// most the last 4 KiB). In a hang or snapshot record, everything the runtime reported so far.
    package var runtimeWarningText: String?
    /// The runtime's warnings before this crash, each once, in the order first given.
    package var runtimeWarnings: [RuntimeWarning] { RuntimeWarning.list(runtimeWarningText) }
    /// The runtime's warnings as the sinks send them: each once, a line each, with "(×N)" when
    /// given more than once; nil when there are none.
    package var runtimeWarningLines: String? {
        let warnings = runtimeWarnings
        guard !warnings.isEmpty else { return nil }
        return warnings.map(\.line).joined(separator: "\n")
    }
    /// The C library's message before it aborted (`CC_STR_ABORT_MESSAGE`: glibc's
    /// `__abort_msg`, e.g. "free(): double free detected in tcache 2" or an assert's
    /// "prog: file.c:12: f: Assertion `x' failed."), for a SIGABRT; trailing newlines removed.
    public var abortMessage: String?
    /// The process's last words: the Swift runtime's fatal-error message, else the C library's
    /// abort message.
    package var lastWords: String? { fatalMessage ?? abortMessage }
    /// The kernel the process ran on (`uname`: sysname release version machine).
    package var kernel: String?
    /// The run id the reporter gave the crashed run (`CC_STR_RUN_ID`), which pairs the record
    /// with that run's marker; `nil` when CrashCapture was started without one.
    package var runID: String?
    /// Notes, in order: every note the writer left (`CC_STR_NOTE`), followed by any the
    /// reader added about the record's shape (for example trailing bytes after the end).
    package var notes: [String]
    /// The crashing thread's registers at the moment of the signal, in the writer's order.
    public var registers: [Register]
    /// Memory windows the writer copied (around the pc, the stack pointer, ...).
    public var memory: [MemoryWindow]
    /// The threads of the process, in the writer's order.
    public var threads: [CrashThread]
    /// The images (executable and shared objects) mapped into the process.
    public var images: [CrashImage]
    /// Breadcrumbs the application left before the crash, oldest first.
    public var breadcrumbs: [Breadcrumb]
    /// The requests in flight and the one the crashed thread was serving (`CrashContext`);
    /// `nil` when the program attaches none.
    package var requests: RequestsInFlight?
    /// The raw JSON text of the compensating `$AppEnd` event (`CC_SEC_APP_END`), unvalidated.
    package var appEndJSON: String?
    /// The app's scope at the crash (tags, user, named contexts); `nil` when none was set.
    public var scope: CrashScope?
    /// Section types this reader skipped because it does not know them, in file order.
    package var unknownSectionTypes: [UInt32]
    /// How many whole sections (checksum verified, including unknown ones and the end
    /// section) the reader accepted.
    package var sectionCount: Int
    /// How long the handler took from the signal to the end section, in microseconds (nil when
    /// the record has no end section or the writer did not measure it).
    package var writeMicroseconds: Int?
    /// A record of a live process (a hang, a snapshot): why it was written. `nil` for a crash.
    package var event: RecordEvent?
    /// What the process had and was allowed at the crash (its memory, descriptors, threads, its
    /// cgroup's memory, the machine's load); nil in a record of an older writer.
    package var resources: CrashResources?
    /// The uncaught C++ exception that ended in std::terminate on the crashed thread (SIGABRT).
    package var cxxException: CxxException?
    /// The memory error the guarded heap caught, when the crash is one (CC_SEC_GUARDED_HEAP).
    package var guardedHeap: GuardedHeapError?

    /// Creates a record; every field defaults to "nothing known".
    package init(
        version: Int = 1,
        architecture: Architecture = .unknown(0),
        completeness: Completeness = .complete,
        signal: SignalInfo? = nil,
        process: CrashedProcess? = nil,
        appName: String? = nil,
        appVersion: String? = nil,
        executablePath: String? = nil,
        fatalMessage: String? = nil,
        abortMessage: String? = nil,
        kernel: String? = nil,
        runID: String? = nil,
        notes: [String] = [],
        registers: [Register] = [],
        memory: [MemoryWindow] = [],
        threads: [CrashThread] = [],
        images: [CrashImage] = [],
        breadcrumbs: [Breadcrumb] = [],
        requests: RequestsInFlight? = nil,
        appEndJSON: String? = nil,
        unknownSectionTypes: [UInt32] = [],
        sectionCount: Int = 0,
        writeMicroseconds: Int? = nil
    ) {
        self.version = version
        self.architecture = architecture
        self.completeness = completeness
        self.signal = signal
        self.process = process
        self.appName = appName
        self.appVersion = appVersion
        self.executablePath = executablePath
        self.fatalMessage = fatalMessage
        self.abortMessage = abortMessage
        self.kernel = kernel
        self.runID = runID
        self.notes = notes
        self.registers = registers
        self.memory = memory
        self.threads = threads
        self.images = images
        self.breadcrumbs = breadcrumbs
        self.requests = requests
        self.appEndJSON = appEndJSON
        self.unknownSectionTypes = unknownSectionTypes
        self.sectionCount = sectionCount
        self.writeMicroseconds = writeMicroseconds
    }

    /// `true` when the record ends with its end section.
    package var isComplete: Bool {
        completeness == .complete
    }

    /// The first thread marked as the one the signal hit, if any.
    public var crashedThread: CrashThread? {
        threads.first { $0.crashed }
    }

    /// The first image whose mapped range contains `address`, if any.
    public func image(containing address: UInt64) -> CrashImage? {
        images.first { $0.contains(address) }
    }

    /// `libfoo.so+0x1a2b` for an address inside one of the images, else `nil`.
    package func offsetLabel(for address: UInt64) -> String? {
        image(containing: address).map { CrashImage.offsetLabel(path: $0.path, offset: address &- $0.base) }
    }
}

extension CrashImage {
    /// How an address without a symbol is named everywhere (the inspector, `AppCrashed`): the
    /// image's file name and the offset from its base, `libfoo.so+0x1a2b`.
    package static func offsetLabel(path: String, offset: UInt64) -> String {
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
        return name + "+0x" + String(offset, radix: 16)
    }
}

extension CrashRecord {
    /// The CPU architecture a record was written on.
    public enum Architecture: Sendable, Equatable, Hashable {
        /// x86-64 (`CC_ARCH_X86_64`).
        case x86_64
        /// 64-bit ARM (`CC_ARCH_AARCH64`).
        case aarch64
        /// Any other value, including `CC_ARCH_UNKNOWN` (0).
        case unknown(UInt16)

        /// Maps the header's `arch` field to an architecture.
        package init(rawValue: UInt16) {
            switch rawValue {
            case 1: self = .x86_64
            case 2: self = .aarch64
            default: self = .unknown(rawValue)
            }
        }

        /// The header's `arch` value for this architecture.
        package var rawValue: UInt16 {
            switch self {
            case .x86_64: return 1
            case .aarch64: return 2
            case .unknown(let value): return value
            }
        }
    }

    /// Whether a record was finished by its writer.
    public enum Completeness: Sendable, Equatable, Hashable {
        /// The record ends with its end section.
        case complete
        /// The record stops early; `reason` says where and why, in one human line.
        case incomplete(reason: String)
    }
}

/// The signal that ended the process (`CC_SEC_CRASH`).
public struct SignalInfo: Sendable, Equatable {
    /// The signal number (`si_signo`), e.g. 11 for SIGSEGV.
    public var number: Int32
    /// The signal's name as the writer knew it, e.g. "SIGSEGV"; empty if unknown.
    public var name: String
    /// The signal code (`si_code`).
    package var code: Int32
    /// The name of the signal code (`si_code`), e.g. "SEGV_MAPERR"; empty if unknown.
    public var codeName: String
    /// A human description of the code, e.g. "address not mapped to object"; empty if unknown.
    public var codeDescription: String
    /// The faulting address (`si_addr`); `nil` unless the kernel reported a fault address
    /// (`CC_CRASH_FAULT_ADDRESS`).
    public var faultAddress: UInt64?
    /// The process that sent the signal; `nil` unless it came from a process
    /// (`CC_CRASH_FROM_PROCESS`: kill, tgkill, sigqueue).
    package var sender: Sender?
    /// The value of `errno` when the handler started.
    package var errnoAtCrash: Int32

    /// The process that sent a signal.
    package struct Sender: Sendable, Equatable {
        /// The sender's process id.
        package var pid: Int32
        /// The sender's real user id.
        package var uid: UInt32

        /// Creates a sender.
        package init(pid: Int32, uid: UInt32) {
            self.pid = pid
            self.uid = uid
        }
    }

    /// Creates a signal description.
    package init(
        number: Int32,
        name: String = "",
        code: Int32 = 0,
        codeName: String = "",
        codeDescription: String = "",
        faultAddress: UInt64? = nil,
        sender: Sender? = nil,
        errnoAtCrash: Int32 = 0
    ) {
        self.number = number
        self.name = name
        self.code = code
        self.codeName = codeName
        self.codeDescription = codeDescription
        self.faultAddress = faultAddress
        self.sender = sender
        self.errnoAtCrash = errnoAtCrash
    }
}

/// The crashed process's identity and clocks (`CC_SEC_PROCESS`).
public struct CrashedProcess: Sendable, Equatable {
    /// The process id.
    public var pid: Int32
    /// The thread id of the crashing thread.
    public var tid: Int32
    /// The parent process id.
    package var ppid: Int32
    /// The real user id.
    package var uid: UInt32
    /// `CLOCK_REALTIME` in nanoseconds when CrashCapture started.
    package var startWallNanoseconds: Int64
    /// `CLOCK_REALTIME` in nanoseconds in the signal handler.
    public var crashWallNanoseconds: Int64
    /// `CLOCK_MONOTONIC` in nanoseconds when CrashCapture started.
    package var startMonotonicNanoseconds: Int64
    /// `CLOCK_MONOTONIC` in nanoseconds in the signal handler.
    package var crashMonotonicNanoseconds: Int64
    /// The crashing thread's name; empty if it had none.
    package var threadName: String

    /// Creates a process description.
    package init(
        pid: Int32,
        tid: Int32,
        ppid: Int32 = 0,
        uid: UInt32 = 0,
        startWallNanoseconds: Int64 = 0,
        crashWallNanoseconds: Int64 = 0,
        startMonotonicNanoseconds: Int64 = 0,
        crashMonotonicNanoseconds: Int64 = 0,
        threadName: String = ""
    ) {
        self.pid = pid
        self.tid = tid
        self.ppid = ppid
        self.uid = uid
        self.startWallNanoseconds = startWallNanoseconds
        self.crashWallNanoseconds = crashWallNanoseconds
        self.startMonotonicNanoseconds = startMonotonicNanoseconds
        self.crashMonotonicNanoseconds = crashMonotonicNanoseconds
        self.threadName = threadName
    }

    /// From CrashCapture's start to the crash on the monotonic clock; never traps, even on
    /// nonsense clocks (a difference that overflows is the largest or smallest duration).
    public var uptime: Duration {
        let (difference, overflow) = crashMonotonicNanoseconds.subtractingReportingOverflow(startMonotonicNanoseconds)
        if overflow { return crashMonotonicNanoseconds > startMonotonicNanoseconds ? .nanoseconds(Int64.max) : .nanoseconds(Int64.min) }
        return .nanoseconds(difference)
    }

    /// ``uptime`` in seconds, as the event model and the inspector print it.
    package var uptimeSeconds: Double {
        let (difference, overflow) = crashMonotonicNanoseconds
            .subtractingReportingOverflow(startMonotonicNanoseconds)
        if overflow {
            return (Double(crashMonotonicNanoseconds) - Double(startMonotonicNanoseconds)) / 1e9
        }
        return Double(difference) / 1e9
    }
}

/// One register of the crashing thread (`CC_SEC_REGISTERS`).
public struct Register: Sendable, Equatable {
    /// The register's name, e.g. "rip" or "x29".
    public var name: String
    /// The register's value.
    public var value: UInt64

    /// Creates a register.
    package init(name: String, value: UInt64) {
        self.name = name
        self.value = value
    }
}

/// A window of process memory the writer copied (`CC_SEC_MEMORY`).
public struct MemoryWindow: Sendable, Equatable {
    /// What the window is around, e.g. "pc" or "sp".
    public var label: String
    /// The address of `bytes[0]` in the crashed process.
    public var address: UInt64
    /// The bytes read at `address`.
    public var bytes: [UInt8]

    /// Creates a memory window.
    package init(label: String, address: UInt64, bytes: [UInt8]) {
        self.label = label
        self.address = address
        self.bytes = bytes
    }
}

/// One thread of the crashed process and its backtrace (`CC_SEC_THREAD`).
public struct CrashThread: Sendable, Equatable {
    /// The thread id.
    public var tid: Int32
    /// The thread's name; empty if it had none.
    public var name: String
    /// `true` for the thread the signal hit (`CC_THREAD_CRASHED`).
    public var crashed: Bool
    /// `true` when the frames were unwound from the signal context, so `frames[0]` is the
    /// exact pc of the fault (`CC_THREAD_FROM_CONTEXT`).
    public var framesFromSignalContext: Bool
    /// `true` when frames were left out (`omittedFrames`) or the unwind hit its step limit
    /// (`CC_THREAD_TRUNCATED`).
    public var truncated: Bool
    /// `true` when the thread has no frames because it was not stopped, or not in time
    /// (`CC_THREAD_NO_STACK`).
    package var stackUnavailable: Bool
    /// `true` when the thread was stopped for the whole time the record was written
    /// (`CC_THREAD_STOPPED`).
    package var stopped: Bool
    /// `true` when the thread blocks the stop signal, so it ran on while the record was
    /// written and has no frames (`CC_THREAD_NOT_STOPPED`).
    package var notStopped: Bool
    /// `true` when the thread faulted too while another thread was writing the record
    /// (`CC_THREAD_ALSO_CRASHED`).
    package var alsoCrashed: Bool
    /// `true` when the thread could not stop itself (it blocks the stop signal) and the thread
    /// helper process stopped it with ptrace and read it from outside (`CC_THREAD_PTRACED`).
    package var ptraced: Bool
    /// `true` when the thread helper could not ptrace the thread (Yama, seccomp, setuid), so it
    /// has no frames (`CC_THREAD_PTRACE_REFUSED`).
    package var ptraceRefused: Bool
    /// The thread's registers where it was stopped (`CC_SEC_THREAD_REGISTERS`); empty for the
    /// crashed thread (see ``CrashRecord/registers``) and for threads that were not read.
    public var registers: [Register]
    /// Frames left out between the innermost and the outermost ones of a very deep stack
    /// (runaway recursion): then `frames` holds `innermostFrameCount` innermost frames followed
    /// by the outermost ones, where the stack began.
    public var omittedFrames: Int
    /// Program counters, innermost first.
    public var frames: [UInt64]
    /// Swift async context chains read from this thread's frames (`CC_SEC_ASYNC_CHAIN`), raw:
    /// which frame is async is decided with symbols (CrashSymbolication's `ThreadFrames`).
    package var asyncChains: [AsyncContextChain] = []
    /// The Swift tasks whole chains of this thread belong to, with their parents
    /// (`CC_SEC_ASYNC_TASK`).
    package var asyncTasks: [AsyncTaskInfo] = []

    /// How many of `frames` come before the omitted ones (all of them when none were omitted).
    package var innermostFrameCount: Int {
        omittedFrames > 0 ? frames.count - frames.count / 2 : frames.count
    }

    /// Creates a thread.
    package init(
        tid: Int32,
        name: String = "",
        crashed: Bool = false,
        framesFromSignalContext: Bool = false,
        truncated: Bool = false,
        stackUnavailable: Bool = false,
        stopped: Bool = false,
        notStopped: Bool = false,
        alsoCrashed: Bool = false,
        ptraced: Bool = false,
        ptraceRefused: Bool = false,
        registers: [Register] = [],
        omittedFrames: Int = 0,
        frames: [UInt64] = []
    ) {
        self.tid = tid
        self.name = name
        self.crashed = crashed
        self.framesFromSignalContext = framesFromSignalContext
        self.truncated = truncated
        self.stackUnavailable = stackUnavailable
        self.stopped = stopped
        self.notStopped = notStopped
        self.alsoCrashed = alsoCrashed
        self.ptraced = ptraced
        self.ptraceRefused = ptraceRefused
        self.registers = registers
        self.omittedFrames = omittedFrames
        self.frames = frames
    }
}

/// A chain of Swift async contexts found from one frame of a thread (`CC_SEC_ASYNC_CHAIN`): each
/// link's `resume` is where its parent async function resumes — one async frame.
package struct AsyncContextChain: Sendable, Equatable {
    /// Where the first context came from.
    package enum Source: Sendable, Equatable {
        /// The word at the frame's fp - 8, where Swift's async frames keep their context.
        case framePointer
        /// Frame 0's async context register (r14 / x22).
        case contextRegister
        /// A suspended parent task's ResumeContext (an ``AsyncTaskInfo`` names it).
        case parentTask
        /// A request's task's ResumeContext, in a record of a live process (``SuspendedTask``).
        case requestTask
    }

    /// Why the chain stops after its last link.
    package enum End: Sendable, Equatable {
        /// The last context's Parent is 0: the task's first context (the chain is whole).
        case parentNull
        /// The next context could not be read.
        case unreadable
        /// The next context is not 16-byte aligned.
        case misaligned
        /// The next context is already in this chain.
        case cycle
        /// The writer's link limit was reached.
        case limit
        /// The next context's resume point is 0 or outside every loaded image.
        case notCode
        /// The next context (the last link's `parent`) is a link of an earlier chain of this thread.
        case joinsEarlierChain
        /// A value this reader does not know.
        case unknown(UInt32)
    }

    /// One context: its address, its Parent and its ResumeParent.
    package struct Link: Sendable, Equatable {
        package var context: UInt64
        package var parent: UInt64
        package var resume: UInt64

        /// Creates a link.
        package init(context: UInt64, parent: UInt64, resume: UInt64) {
            self.context = context
            self.parent = parent
            self.resume = resume
        }
    }

    /// The physical frame (index into the thread's `frames`) the chain starts from.
    package var frameIndex: Int
    package var source: Source
    /// The first context.
    package var firstContext: UInt64
    /// The links, first context first; empty when `firstContext` is a link of an earlier chain.
    package var links: [Link]
    package var end: End

    /// Creates a chain.
    package init(frameIndex: Int, source: Source, firstContext: UInt64, links: [Link], end: End) {
        self.frameIndex = frameIndex
        self.source = source
        self.firstContext = firstContext
        self.links = links
        self.end = end
    }
}

/// The Swift task a whole async context chain belongs to (`CC_SEC_ASYNC_TASK`), and, for a child
/// task, the parent it was spawned by: suspended, waiting for it.
package struct AsyncTaskInfo: Sendable, Equatable {
    /// The `AsyncTask`'s address.
    package var task: UInt64
    /// The task's id, as the runtime numbers tasks.
    package var id: UInt32
    /// The task's JobFlags.
    package var jobFlags: UInt32
    /// The first context of the task: the last link of the chain it ends.
    package var firstContext: UInt64
    /// The parent task, for a child task whose parent could be read.
    package var parent: UInt64?
    package var parentID: UInt32
    /// Where the parent resumes (its ResumeTask), and its context: the parent's chain starts there.
    package var parentResume: UInt64
    package var parentContext: UInt64

    /// A child task (async let or a task group's child).
    package var isChild: Bool { jobFlags & CC_TASK_IS_CHILD != 0 }
    /// A task group's child.
    package var isGroupChild: Bool { jobFlags & CC_TASK_IS_GROUP_CHILD != 0 }
    /// An async let's child.
    package var isAsyncLet: Bool { jobFlags & CC_TASK_IS_ASYNC_LET != 0 }

    /// Creates a task.
    package init(task: UInt64, id: UInt32, jobFlags: UInt32, firstContext: UInt64, parent: UInt64?, parentID: UInt32 = 0,
                parentResume: UInt64 = 0, parentContext: UInt64 = 0) {
        self.task = task
        self.id = id
        self.jobFlags = jobFlags
        self.firstContext = firstContext
        self.parent = parent
        self.parentID = parentID
        self.parentResume = parentResume
        self.parentContext = parentContext
    }
}

extension CrashThread {
    /// The task whose first context is `context`, if the record names one.
    package func asyncTask(firstContext context: UInt64) -> AsyncTaskInfo? {
        asyncTasks.first { $0.firstContext == context }
    }

    /// The links that follow from `context`, across the chains of this thread that share them
    /// (a chain may end where it joins an earlier one), without repeating a context.
    package func asyncLinks(from context: UInt64) -> [AsyncContextChain.Link] {
        var byContext: [UInt64: AsyncContextChain.Link] = [:]
        for chain in asyncChains {
            for link in chain.links where byContext[link.context] == nil { byContext[link.context] = link }
        }
        var result: [AsyncContextChain.Link] = []
        var seen: Set<UInt64> = []
        var next = context
        while let link = byContext[next], seen.insert(next).inserted {
            result.append(link)
            if link.parent == 0 { break }
            next = link.parent
        }
        return result
    }

    /// The chain that starts at frame `index` from `source`, if one was recorded.
    package func asyncChain(atFrame index: Int, source: AsyncContextChain.Source) -> AsyncContextChain? {
        asyncChains.first { $0.frameIndex == index && $0.source == source }
    }
}

/// An executable or shared object mapped into the crashed process (`CC_SEC_IMAGE`).
public struct CrashImage: Sendable, Equatable {
    /// The image's path as mapped.
    public var path: String
    /// The address the image's first byte (its ELF header) is mapped at.
    public var base: UInt64
    /// Bytes from `base` to the end of the image's last mapping.
    public var size: UInt64
    /// The GNU build-id (usually 20 bytes); empty when the image has none.
    package var buildID: [UInt8]
    /// `true` for the main executable (`CC_IMAGE_MAIN_EXECUTABLE`).
    public var isMainExecutable: Bool

    /// Creates an image.
    package init(path: String, base: UInt64, size: UInt64, buildID: [UInt8] = [], isMainExecutable: Bool = false) {
        self.path = path
        self.base = base
        self.size = size
        self.buildID = buildID
        self.isMainExecutable = isMainExecutable
    }

    /// The image's GNU build-id as lowercase hex, e.g. "9f1c..." (as `file` and `readelf -n` print it,
    /// and as debug files are named under `.build-id/`); empty when the image has none.
    public var buildIDHex: String { CrashImage.lowercaseHex(buildID) }

    /// Bytes as lowercase hex, two digits each: how build-ids are written.
    package static func lowercaseHex(_ bytes: [UInt8]) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// `true` when `address` lies in `base ..< base + size`.
    package func contains(_ address: UInt64) -> Bool {
        address >= base && address &- base < size
    }
}

/// A breadcrumb the application left before the crash (`CC_SEC_BREADCRUMB`).
public struct Breadcrumb: Sendable, Equatable {
    /// `CLOCK_REALTIME` in nanoseconds when the breadcrumb was left.
    public var wallNanoseconds: Int64
    /// The level it was left at.
    public var level: BreadcrumbLevel
    /// The breadcrumb's message.
    public var message: String

    /// Creates a breadcrumb.
    package init(wallNanoseconds: Int64, level: BreadcrumbLevel, message: String) {
        self.wallNanoseconds = wallNanoseconds
        self.level = level
        self.message = message
    }
}

/// A breadcrumb's level: swift-log's levels, in its order. The numbers the record holds are
/// `CC_BREADCRUMB_*` in cc_record.h, and only there; a value this reader does not know (a newer
/// writer's, or a C caller's of `cc_breadcrumb`) is kept as written.
public enum BreadcrumbLevel: Sendable, Hashable {
    /// swift-log's levels, lowest first.
    case trace, debug, info, notice, warning, error, critical
    /// A level the record format does not define, as written.
    case unknown(UInt32)

    /// The level a record's number stands for.
    package init(rawValue: UInt32) {
        switch rawValue {
        case CC_BREADCRUMB_TRACE: self = .trace
        case CC_BREADCRUMB_DEBUG: self = .debug
        case CC_BREADCRUMB_INFO: self = .info
        case CC_BREADCRUMB_NOTICE: self = .notice
        case CC_BREADCRUMB_WARNING: self = .warning
        case CC_BREADCRUMB_ERROR: self = .error
        case CC_BREADCRUMB_CRITICAL: self = .critical
        default: self = .unknown(rawValue)
        }
    }

    /// The number the record holds for this level.
    package var rawValue: UInt32 {
        switch self {
        case .trace: return CC_BREADCRUMB_TRACE
        case .debug: return CC_BREADCRUMB_DEBUG
        case .info: return CC_BREADCRUMB_INFO
        case .notice: return CC_BREADCRUMB_NOTICE
        case .warning: return CC_BREADCRUMB_WARNING
        case .error: return CC_BREADCRUMB_ERROR
        case .critical: return CC_BREADCRUMB_CRITICAL
        case .unknown(let value): return value
        }
    }

    /// swift-log's name of the level ("trace" … "critical"); "level N" for an unknown one.
    package var name: String {
        switch self {
        case .trace: return "trace"
        case .debug: return "debug"
        case .info: return "info"
        case .notice: return "notice"
        case .warning: return "warning"
        case .error: return "error"
        case .critical: return "critical"
        case .unknown(let value): return "level \(value)"
        }
    }
}

/// A report the Swift runtime made during the run that did not end it — most often a leaked
/// `CheckedContinuation` ("SWIFT TASK CONTINUATION MISUSE: f() leaked its continuation without
/// resuming it…"), which leaves the task that awaits it suspended forever. Never a crash's message.
package struct RuntimeWarning: Sendable, Equatable {
    /// The report's text, one line.
    package var text: String
    /// How many times the record holds it.
    package var count: Int

    package init(text: String, count: Int) {
        self.text = text
        self.count = count
    }

    /// The text, and "(×N)" when given more than once.
    package var line: String { count > 1 ? "\(text) (×\(count))" : text }

    /// The function a leaked-continuation warning names, as the concurrency runtime words it
    /// (`SWIFT TASK CONTINUATION MISUSE: <#function> leaked its continuation without resuming it.
    /// …`): the function that awaited the continuation, where the task waits forever since.
    package var leakedContinuationFunction: String? {
        let prefix = "SWIFT TASK CONTINUATION MISUSE: ", marker = " leaked its continuation"
        guard text.hasPrefix(prefix) else { return nil }
        let rest = text.dropFirst(prefix.count)
        guard let end = Self.find(marker[...], in: rest) else { return nil }
        let function = rest[..<end.lowerBound]
        return function.isEmpty ? nil : String(function)
    }

    /// Where `needle` first stands in `text` (no Foundation here).
    static func find(_ needle: Substring, in text: Substring) -> Range<String.Index>? {
        var start = text.startIndex
        while start < text.endIndex {
            if text[start...].hasPrefix(needle) { return start ..< text.index(start, offsetBy: needle.count) }
            start = text.index(after: start)
        }
        return nil
    }

    /// Whether a frame named `symbol` (demangled, as the symbolicator names it) is in the function
    /// this leaked-continuation warning names: its base name followed by `(`, as a whole name
    /// (`Orders.awaitPayment(for:) async -> …`, `… partial function for Orders.awaitPayment(for:)`).
    package func names(frame symbol: String) -> Bool {
        guard let function = leakedContinuationFunction else { return false }
        let base = function.prefix { $0 != "(" }
        guard !base.isEmpty else { return false }
        var rest = symbol[...]
        while let found = Self.find((base + "(")[...], in: rest) {
            let before = found.lowerBound == symbol.startIndex ? nil : symbol[symbol.index(before: found.lowerBound)]
            if before == nil || before == "." || before == " " { return true }
            rest = symbol[found.upperBound...]
        }
        return false
    }

    /// The warnings in `text` (one a line), each once with its count, in the order first given.
    package static func list(_ text: String?) -> [RuntimeWarning] {
        guard let text else { return [] }
        var order: [String] = []
        var counts: [String: Int] = [:]
        for line in text.split(whereSeparator: \.isNewline) {
            let line = String(line.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
            guard !line.isEmpty else { continue }
            if counts[line] == nil { order.append(line) }
            counts[line, default: 0] += 1
        }
        return order.map { RuntimeWarning(text: $0, count: counts[$0] ?? 1) }
    }
}

extension [RuntimeWarning] {
    /// The leaked-continuation warning whose function a task waits in: `frames`, where it waits
    /// first (the innermost two are looked at: the resume point and its function's caller).
    package func leakedContinuation(awaitedIn frames: [String]) -> RuntimeWarning? {
        first { warning in frames.prefix(2).contains { warning.names(frame: $0) } }
    }
}
