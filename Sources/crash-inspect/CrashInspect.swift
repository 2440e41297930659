// CrashInspect.swift — crash-inspect: read, symbolicate and group crash records offline.
import ArgumentParser
import CrashRecordFormat
import CrashInspection
import CrashMinidump
import CrashSentry
import CrashSymbolication
import Foundation

@main
struct CrashInspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crash-inspect",
        abstract: "Reads, symbolicates and groups CrashCapture crash records, offline.",
        discussion: """
            Every file is treated as untrusted: a truncated, corrupt, foreign or oversized file gets a \
            one-line error and the others are still read. Symbolication matches binaries by GNU build-id \
            and never shows names from a binary whose build-id differs.
            """,
        subcommands: [List.self, Show.self, Groups.self, Snapshot.self, Export.self, Symbols.self]
    )
}

/// Options every record-reading command shares.
struct RecordOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Directory of crash records.", valueName: "dir"))
    var dir: String = ProcessInfo.processInfo.environment["CRASHCAPTURE_DIR"] ?? "."

    @Option(name: .customLong("symbols"), help: ArgumentHelp(
        "Symbol store searched by build-id (repeatable): the .build-id/xx/rest.debug layout, or a flat directory of binaries and debug files. DEBUGINFOD_URLS servers are asked for the rest.",
        valueName: "dir"))
    var symbols: [String] = []

    @Flag(help: "Print JSON for scripts instead of text.")
    var json = false

    func symbolicator() -> Symbolicator? {
        do { return try Symbolicator(symbolDirectories: symbols) } catch {
            FileHandle.standardError.write(Data("crash-inspect: \(error); frames stay unsymbolicated\n".utf8))
            return nil
        }
    }

    /// Every record in `dir`; a bad file is reported on stderr in one line and skipped.
    func inspections() throws -> (good: [Inspection], bad: [(id: String, error: String)]) {
        let entries: [RecordEntry]
        do { entries = try RecordDirectory.entries(in: dir) } catch {
            throw RuntimeFailure(description: "\(error)")
        }
        let symbolicator = self.symbolicator()
        var good: [Inspection] = []
        var bad: [(String, String)] = []
        for entry in entries {
            switch entry.result {
            case .success(let record): good.append(Inspection(path: entry.path, record: record, symbolicator: symbolicator))
            case .failure(let error):
                bad.append((entry.id, error.description))
                FileHandle.standardError.write(Data("crash-inspect: \((entry.path as NSString).lastPathComponent): \(error)\n".utf8))
            }
        }
        return (good, bad)
    }

    /// These options with `directory` (a plain argument) as --dir, when given.
    func `in`(_ directory: String?) -> RecordOptions {
        var options = self
        if let directory { options.dir = directory }
        return options
    }

    /// The path of the directory's newest record (by the time in its name), or nil.
    func newestRecord() throws -> String? {
        let names: [String]
        do { names = try RecordFileName.names(in: dir) } catch { throw RuntimeFailure(description: "\(error)") }
        let newest = names.max { (RecordFileName($0)?.milliseconds ?? 0, $0) < (RecordFileName($1)?.milliseconds ?? 0, $1) }
        return newest.map { (dir as NSString).appendingPathComponent($0) }
    }

    /// What a record of the directory stands for beyond its own crash (its tally beside it).
    func tally(of inspection: Inspection) -> RecordTally {
        let name = String(inspection.path.split(separator: "/").last ?? "")
        let directory = inspection.path.hasSuffix("/" + name) ? String(inspection.path.dropLast(name.count + 1)) : dir
        return RecordTally.read(record: name, in: directory)
    }

    /// One record named by path or id, and the bytes it was parsed from.
    func inspection(_ recordOrID: String) throws -> (Inspection, [UInt8]) {
        guard let path = RecordDirectory.locate(recordOrID, in: dir) else {
            throw ValidationError("no record '\(recordOrID)' (give a file path, or an id from `crash-inspect list --dir \(dir)`)")
        }
        do {
            // Read once, with the reader's checks (no symbolic link, no FIFO, a regular file within
            // the size limit), and parse those bytes: what is shown, attached and hashed into an
            // event id is one read of one file, never a second open of a path that may have changed.
            let raw = try CrashRecordReader.readBytes(path: path)
            let record = try CrashRecordReader.parse(raw)
            return (Inspection(path: path, record: record, symbolicator: symbolicator()), raw)
        } catch {
            throw RuntimeFailure(description: "\((path as NSString).lastPathComponent): \(error)")
        }
    }
}


extension CrashInspect {
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "One line per record: id, time, app and version, signal, fatal message, top frame of our code, the request it was serving.")

        @Argument(help: ArgumentHelp("The directory of crash records, as --dir names it.", valueName: "dir"))
        var directory: String?

        @OptionGroup var given: RecordOptions
        var options: RecordOptions { given.in(directory) }

        func run() throws {
            let (good, bad) = try options.inspections()
            if options.json {
                let rows: [ListRow] = good.map { inspection in
                    let record = inspection.record
                    let summary = inspection.summary
                    return .record(.init(
                        id: inspection.id, file: inspection.path, kind: record.kind.rawValue, complete: record.isComplete,
                        time: Nullable(record.process.map { isoTime($0.crashWallNanoseconds) }),
                        app: Nullable(record.appName), version: Nullable(record.appVersion),
                        signalName: Nullable(record.signal?.name), summary: summary.headline, message: Nullable(summary.message),
                        topFrame: Nullable(inspection.topFrameOfOurCode.map(Inspection.label)),
                        crashes: options.tally(of: inspection).totalCrashes,
                        request: Nullable(record.requests?.crashed.map(Rendering.requestName))))
                } + bad.map { .unreadable(id: $0.id, error: $0.error) }
                print(Rendering.encode(rows))
                return
            }
            for inspection in good {
                let record = inspection.record
                let time = record.process.map { isoTime($0.crashWallNanoseconds) } ?? "-"
                let app = "\(record.appName ?? "?") \(record.appVersion ?? "")"
                let summary = inspection.summary
                let message = summary.message.map { "\"\(shorten($0, 100))\"" } ?? "-"
                let top = inspection.topFrameOfOurCode.map { shorten(Inspection.label($0), 60) } ?? "-"
                let request = record.requests?.crashed.map { "  serving " + shorten(Rendering.requestName($0), 64) } ?? ""
                var state = record.isComplete ? "" : " (incomplete)"
                let tally = options.tally(of: inspection)
                if tally.folded > 0 { state += " (+\(tally.folded) folded crashes of this signature)" }
                print("\(inspection.id)  \(time)  \(app)  \(summary.title)  \(message)  \(top)\(request)\(state)")
            }
            if good.isEmpty && bad.isEmpty { print("no crash records in \(options.dir)") }
        }

        func shorten(_ text: String, _ limit: Int) -> String {
            text.count <= limit ? text : String(text.prefix(limit - 1)) + "…"
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The whole story of one crash.")

        @Argument(help: "A record file, a record id in --dir, or a directory of records (its newest record).")
        var record: String

        @Flag(name: .customLong("all-frames"), help: "Every frame, with full names (by default the text shows the program's own frames, folds runs of other code into one line and shortens Swift names as Swift's backtracer does).")
        var allFrames = false

        @OptionGroup var options: RecordOptions

        func run() throws {
            var options = options
            var record = record
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: record, isDirectory: &isDirectory), isDirectory.boolValue {
                options.dir = record
                guard let newest = try options.newestRecord() else { throw RuntimeFailure(description: "no crash records in \(record)") }
                record = newest
            }
            let (inspection, _) = try options.inspection(record)
            print(options.json ? Rendering.jsonText(inspection) : Rendering.text(inspection, allFrames: allFrames))
        }
    }

    struct Snapshot: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Asks a running process for a snapshot record, waits for it and shows it.",
            discussion: """
                The process must run capture with hang detection on (CRASHCAPTURE_HANG_SECONDS, or \
                HangDetection in its configuration). Its record directory is found from /proc (its watcher \
                holds a shared lock on it; reading its descriptors needs its user or root); --dir names it \
                where that cannot be read. This command leaves a request file there, which the process's \
                watcher answers within a tick (at most a second). \
                No signal is sent: a process that does not watch is not disturbed. Its threads stand \
                still only while they are read (the record says how long).
                """)

        @Argument(help: "The process id.")
        var pid: Int32

        @Option(help: "Seconds to wait for the answer.")
        var timeout: Double = 10

        @OptionGroup var options: RecordOptions

        func run() throws {
            guard pid > 0, kill(pid, 0) == 0 || errno == EPERM else { throw ValidationError("no process \(pid)") }
            // Where the process watches, as it says; else --dir (or CRASHCAPTURE_DIR, or here).
            let watched = WatchedDirectory.of(pid: pid)
            let directory = watched.count == 1 ? watched[0] : options.dir
            let request = directory + "/" + RecordFileName.snapshotRequest(pid: pid)
            let answer = directory + "/" + RecordFileName.snapshotAnswer(pid: pid)
            unlink(answer)   // a stale answer of an earlier request
            let fd = open(request, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw RuntimeFailure(description: "cannot leave a request in \(directory): \(String(cString: strerror(errno)))")
            }
            close(fd)
            let deadline = Date().addingTimeInterval(timeout)
            var text: String?
            while Date() < deadline {
                if let data = FileManager.default.contents(atPath: answer) {
                    text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                    break
                }
                usleep(50_000)
            }
            unlink(answer)
            guard let text else {
                unlink(request)
                throw RuntimeFailure(description: "process \(pid) did not answer within \(timeout) s: it answers only with hang detection on "
                                     + "(CRASHCAPTURE_HANG_SECONDS, or HangDetection in its configuration) and records in \(directory)")
            }
            if text.hasPrefix("error:") { throw RuntimeFailure(description: "process \(pid): \(text)") }
            let (inspection, _) = try options.inspection(directory + "/" + text)
            print(options.json ? Rendering.jsonText(inspection) : Rendering.text(inspection))
        }
    }

    struct Groups: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Records grouped by a signature that survives ASLR and rebuilds: what fired and the first frames of the program's own code.",
            discussion: """
                Each group says which rule chose its frames: "app frames" (the first three of the program's own \
                code), "innermost package frame" (no frame of its own: the innermost frame of a package it links, \
                with the fatal message), or "system frames" (only the runtime's and the C library's).
                """)

        @Argument(help: ArgumentHelp("The directory of crash records, as --dir names it.", valueName: "dir"))
        var directory: String?

        @OptionGroup var given: RecordOptions
        var options: RecordOptions { given.in(directory) }

        func run() throws {
            let inspections = try options.inspections()
            let groups = CrashGroup.make(inspections.good, directory: options.dir, unreadable: inspections.bad.map(\.id))
            if options.json {
                print(Rendering.encode(groups.map(\.json)))
                return
            }
            for group in groups {
                let first = group.firstSeenNanoseconds.map(isoTime) ?? "-"
                let last = group.lastSeenNanoseconds.map(isoTime) ?? "-"
                let folded = group.crashes == group.ids.count ? "" : " (\(group.ids.count) records kept, the others folded into them)"
                print("\(group.crashes) × \(group.signature)" + folded)
                print("    \(group.explanation)")
                if !group.rule.isEmpty { print("    grouped by \(group.rule)") }
                print("    first \(first), last \(last), versions \(group.appVersions.sorted().joined(separator: ", "))")
            }
            if groups.isEmpty { print("no crash records in \(options.dir)") }
        }
    }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Writes a record in another engine's format.",
            discussion: """
                --sentry: a Sentry envelope (event with exception, stack trace, threads, debug images with code ids, the raw record attached), \
                for `sentry-cli send-envelope` or a POST to /api/<project>/envelope/. --minidump: a Linux minidump (every thread's \
                registers, the crashed thread's stack, modules with GNU build-ids, the signal), for `lldb -c FILE`, Breakpad's \
                minidump_stackwalk or Sentry's minidump upload; what it leaves out is said on standard error.
                """)

        @Argument(help: "A record file, or a record id in --dir.")
        var record: String

        @Flag(help: "Write a Sentry envelope.")
        var sentry = false

        @Flag(help: "Write a Linux minidump.")
        var minidump = false

        @Option(name: .shortAndLong, help: "Write to this file instead of standard output.")
        var output: String?

        @OptionGroup var options: RecordOptions

        func validate() throws {
            guard sentry != minidump else { throw ValidationError("choose one format: --sentry or --minidump") }
        }

        func run() throws {
            let (inspection, raw) = try options.inspection(record)
            if minidump {
                let dump: Minidump
                do { dump = try Minidump(record: inspection.record) } catch {
                    throw RuntimeFailure(description: "\((inspection.path as NSString).lastPathComponent): \(error)")
                }
                for note in dump.notes { FileHandle.standardError.write(Data("crash-inspect: note: \(note)\n".utf8)) }
                try write(dump.bytes)
                return
            }
            // The frames as shown here (async callers and function names known here) go along;
            // the distribution of this machine does not: the record may come from another one.
            let framesByThread = Dictionary(inspection.threads.map { ($0.thread.tid, $0.frames) }, uniquingKeysWith: { a, _ in a })
            let bytes = SentryEnvelope.make(
                record: inspection.record, rawRecord: raw, fileName: (inspection.path as NSString).lastPathComponent,
                // No sent_at: the envelope is sent later, by whoever sends it (sentry-cli does not
                // add one), and Relay would shift the event's times by the delay.
                eventID: SentryEnvelope.eventID(rawRecord: raw), sentAt: nil, frames: { framesByThread[$0.tid] ?? [] })
            try write(bytes)
        }

        func write(_ bytes: [UInt8]) throws {
            if let output {
                guard FileManager.default.createFile(atPath: output, contents: Data(bytes)) else {
                    throw RuntimeFailure(description: "cannot write \(output)")
                }
            } else {
                FileHandle.standardOutput.write(Data(bytes))
            }
        }
    }

    struct Symbols: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Symbol stores: debug information kept by build-id for stripped binaries.",
            subcommands: [Add.self])

        struct Add: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Files each binary's debug information under DIR/.build-id/xx/rest.debug.",
                discussion: """
                    Run it on the unstripped binaries before stripping them; ship the stripped ones and keep \
                    DIR (or serve it with `debuginfod -F DIR`). A binary that is already a separate debug \
                    file is copied, any other gets `objcopy --only-keep-debug`. Running it again changes \
                    nothing. A binary without a GNU build-id or without debug sections is refused, and the \
                    command then exits 1 after adding the others.
                    """)

            @Argument(help: "Unstripped binaries or separate debug files.")
            var binaries: [String]

            @Option(help: ArgumentHelp("The symbol store directory (created if needed).", valueName: "dir"))
            var to: String

            @Flag(help: "Print JSON for scripts instead of text.")
            var json = false

            func validate() throws {
                guard !binaries.isEmpty else { throw ValidationError("give at least one binary") }
            }

            func run() throws {
                var rows: [SymbolsAddRow] = []
                var refused = 0
                for binary in binaries {
                    do {
                        let buildID = hexString(try ELFFile(path: binary).buildID)
                        switch try SymbolStore.add(binary: binary, to: to) {
                        case .added(let path):
                            rows.append(SymbolsAddRow(binary: binary, buildID: buildID, path: path, result: "added"))
                            if !json { print("\(binary): \(buildID) added as \(path)") }
                        case .alreadyPresent(let path):
                            rows.append(SymbolsAddRow(binary: binary, buildID: buildID, path: path, result: "alreadyPresent"))
                            if !json { print("\(binary): \(buildID) already present as \(path)") }
                        }
                    } catch {
                        refused += 1
                        let reason = (error as? SymbolStore.Refusal)?.description ?? "\(error)"
                        rows.append(SymbolsAddRow(binary: binary, error: reason))
                        FileHandle.standardError.write(Data("crash-inspect: \(reason)\n".utf8))
                    }
                }
                if json { print(Rendering.encode(rows)) }
                if refused > 0 { throw ExitCode(1) }
            }
        }
    }
}
