// StackPlace.swift — where a stack is, in a few words a person reads and a grouping can key on:
// the innermost function of the program itself and the function that called it. A deadlock's
// threads are named by it, and a computing hang by where its sampled threads most often were.
package import CrashRecordFormat

extension CrashRecord {
    /// Where the stack `addresses` (innermost first) is: its innermost function in the main
    /// executable and that function's caller, `transferFunds → Locks.withSecond<A>` (a closure
    /// counts as the function it is in, a thunk as the function it forwards to; no signature),
    /// named by `name` where this machine has a name, else `image+0xoffset`; its first frame's
    /// name when no frame is in the main executable.
    package func place(ofStack addresses: [UInt64], name: (UInt64) -> String?) -> String {
        let main = images.first { $0.isMainExecutable }
        let inMain = addresses.filter { address in main.map { address >= $0.base && address - $0.base < $0.size } ?? false }
        func label(_ address: UInt64) -> String {
            name(address).map(Self.shortFunctionName) ?? offsetLabel(for: address) ?? "0x" + String(address, radix: 16)
        }
        var names: [String] = []
        for address in inMain where names.count < 2 {
            let text = label(address)
            if names.last != text { names.append(text) }
        }
        if names.isEmpty, let first = addresses.first { names = [label(first)] }
        return names.count == 2 ? "\(names[1]) → \(names[0])" : names.first ?? "?"
    }

    /// A demangled function's name without its signature: `closure #1 () -> () in f(…) -> ()` is
    /// `f`, `partial apply forwarder for g(…)` is `g`, `(1) suspend resume partial function for h(…)`
    /// is `h`.
    package static func shortFunctionName(_ demangled: String) -> String {
        var text = demangled
        // An async function's partial: "(1) suspend resume partial function for f(…)" is f's.
        if text.hasPrefix("("), let close = text.firstIndex(of: ")"), close > text.index(after: text.startIndex),
           text[text.index(after: text.startIndex) ..< close].allSatisfy(\.isNumber) {
            text = String(text[text.index(after: close)...].drop { $0 == " " })
        }
        for prefix in ["suspend resume partial function for ", "await resume partial function for ", "resume partial function for "]
        where text.hasPrefix(prefix) { text.removeFirst(prefix.count) }
        for prefix in ["partial apply forwarder for ", "reabstraction thunk helper "] where text.hasPrefix(prefix) { text.removeFirst(prefix.count) }
        if text.hasPrefix("closure #") {
            let characters = Array(text), marker = Array(" in ")
            if let at = stride(from: characters.count - marker.count, through: 0, by: -1).first(where: {
                Array(characters[$0 ..< $0 + marker.count]) == marker
            }) { text = String(characters[(at + marker.count)...]) }
        }
        for prefix in ["partial apply forwarder for ", "reabstraction thunk helper "] where text.hasPrefix(prefix) { text.removeFirst(prefix.count) }
        if let paren = text.firstIndex(of: "("), paren != text.startIndex { text = String(text[..<paren]) }
        return text.isEmpty ? demangled : text
    }
}

extension StackSamples {
    /// Where the sampled threads most often were (``CrashRecord/place(ofStack:name:)`` of each
    /// sample), most samples first, ties by name.
    package func hottest(in record: CrashRecord, name: (UInt64) -> String?) -> [(place: String, samples: Int)] {
        var counts: [String: Int] = [:]
        for sample in samples { counts[record.place(ofStack: sample.frames, name: name), default: 0] += 1 }
        return counts.map { ($0.key, $0.value) }.sorted { $0.samples != $1.samples ? $0.samples > $1.samples : $0.place < $1.place }
    }
}
