// StateCopy.swift — the store's identity and super properties, copied to `<store>-state`, so that
// a quiet launch (LaunchJournal.swift) starts with them without opening SQLite.
//
// The store (`meta`) stays their owner: the copy is rewritten from it after every launch that
// opened the store and after every change of the login or the super properties, and it names
// the store file it was copied from (device, inode, size, modification time). A copy of another
// file (the store was deleted, or moved aside as corrupt), of a file written since (a WAL
// checkpoint, another process), or one that does not read whole, is not used: the launch
// opens the store, as it did before there was a copy. Two processes changing the identity at the
// same moment may leave either one's copy; the next launch that opens the store writes it again.
//
//     sensors-store-state 1
//     store=<device>:<inode>:<size>:<modified, s.ns>
//     anonymous_id=<id>
//     login_id=<id>                 (absent when logged out)
//     super_properties=<JSON object>
// Values escape `\` and newline as `\\` and `\n`.
import Foundation
import HostFacts
import SensorsEvents
#if canImport(Glibc)
import Glibc
#endif

extension TrackingStore {
    /// The copy of the store at `path`.
    package static func stateCopyPath(_ path: String) -> String { path + "-state" }

    /// The store file as the copy names it: device, inode, size and the time it was last
    /// modified, to the nanosecond (`nil` when there is no file). A file made again at the path
    /// (a freed inode is soon given out again) or written to by a checkpoint since the copy was
    /// made does not match: the launch then opens the store and makes the copy again.
    private var fileIdentity: String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return "\(info.st_dev):\(info.st_ino):\(info.st_size):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
    }

    /// The state as the copy has it (never a first start), when the copy is whole and was made
    /// from the store file that is there now.
    package func stateFromCopy() -> StoreState? {
        guard let identity = fileIdentity,
              let bytes = SmallFile.read(Self.stateCopyPath(path), limit: 1 << 20, followLinks: false)?.bytes,
              let copy = Self.parseCopy(bytes), copy.store == identity,
              let anonymous = copy.anonymousID, !anonymous.isEmpty, let superText = copy.superProperties
        else { return nil }
        return StoreState(anonymousID: anonymous, loginID: copy.loginID,
                          superProperties: superText == "{}" ? [:] : SuperPropertiesCoding.decode(superText), isFirstStart: false)
    }

    /// Writes the copy from the store's state as it is now (a read), unless it already says that.
    /// Best effort: a copy that cannot be written only means the next launch opens the store.
    /// `onlyIfPresent`: only when there is a copy already (a change of the state), decided under
    /// the same lock as the rewrite: a launch's first copy, made from a read taken before a
    /// change, is then always followed by that change's rewrite.
    package func refreshStateCopy(onlyIfPresent: Bool = false) {
        copyLock.withLock {
            if onlyIfPresent, access(Self.stateCopyPath(path), F_OK) != 0 { return }
            guard let identity = fileIdentity,
                  let state = try? read({ db -> (String, String?, String)? in
                      guard let anonymous = try Self.meta(db, "anonymous_id") else { return nil }
                      return (anonymous, try Self.meta(db, "login_id"), try Self.meta(db, "super_properties") ?? "{}")
                  }) ?? nil
            else { return }
            var text = "sensors-store-state 1\nstore=\(identity)\nanonymous_id=\(Self.escape(state.0))\n"
            if let login = state.1 { text += "login_id=\(Self.escape(login))\n" }
            text += "super_properties=\(Self.escape(state.2))\n"
            let target = Self.stateCopyPath(path)
            if SmallFile.text(target, limit: 1 << 20, followLinks: false)?.text == text { return }
            _ = SmallFile.replace(target, with: Array(text.utf8))
        }
    }

    /// Whether the copy is whole and names the store file as it is now.
    func copyNamesFile() -> Bool {
        guard let identity = fileIdentity, let bytes = SmallFile.read(Self.stateCopyPath(path), limit: 1 << 20, followLinks: false)?.bytes,
              let copy = Self.parseCopy(bytes) else { return false }
        return copy.store == identity
    }

    /// Makes the copy name the store file as it is now, its state unchanged (after a close
    /// checkpointed the file that the copy named before).
    func restampStateCopy() {
        copyLock.withLock {
            let target = Self.stateCopyPath(path)
            guard let identity = fileIdentity, let text = SmallFile.text(target, limit: 1 << 20, followLinks: false)?.text,
                  Self.parseCopy(Array(text.utf8)) != nil else { return }
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.hasPrefix("store=") ? "store=\(identity)" : String($0) }
            _ = SmallFile.replace(target, with: Array(lines.joined(separator: "\n").utf8))
        }
    }

    /// A copy's fields.
    struct CopyFields: Equatable {
        var store: String?
        var anonymousID: String?
        var loginID: String?
        var superProperties: String?
    }

    /// The copy's fields; `nil` when it is not a whole copy of this format. Parsed as bytes: a
    /// quiet launch reads it, and a first `Dictionary` of a new type or `String` splitting cost
    /// more there than the file's read.
    static func parseCopy(_ bytes: [UInt8]) -> CopyFields? {
        guard bytes.last == 0x0A else { return nil }
        var fields = CopyFields()
        var start = 0
        var header = true
        for index in bytes.indices where bytes[index] == 0x0A {
            let line = bytes[start..<index]
            start = index + 1
            if header {
                guard line.elementsEqual("sensors-store-state 1".utf8) else { return nil }
                header = false
                continue
            }
            guard let equals = line.firstIndex(of: UInt8(ascii: "=")), let value = unescape(line[(equals + 1)...]) else { return nil }
            let key = line[..<equals]
            if key.elementsEqual("store".utf8) {
                fields.store = value
            } else if key.elementsEqual("anonymous_id".utf8) {
                fields.anonymousID = value
            } else if key.elementsEqual("login_id".utf8) {
                fields.loginID = value
            } else if key.elementsEqual("super_properties".utf8) {
                fields.superProperties = value
            }
        }
        return header ? nil : fields
    }

    static func escape(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for character in value.unicodeScalars {
            switch character {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    static func unescape(_ value: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(value.count)
        var escaped = false
        for byte in value {
            if escaped {
                switch byte {
                case UInt8(ascii: "\\"): out.append(byte)
                case UInt8(ascii: "n"): out.append(0x0A)
                default: return nil
                }
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else {
                out.append(byte)
            }
        }
        return escaped ? nil : String(decoding: out, as: UTF8.self)
    }
}
