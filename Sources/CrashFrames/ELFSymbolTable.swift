// ELFSymbolTable.swift — function symbols of an ELF file by address, and the async-function test over a record's images that needs no symbolizer (what Swift's backtracer reads on Linux).
package import CrashRecordFormat
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The function symbols (`STT_FUNC`, and `STT_NOTYPE` with a size) of an ELF64 little-endian file:
/// `.symtab`, else `.dynsym`. The file is untrusted: offsets are bounds-checked, sizes capped,
/// and a malformed table yields an error, never a crash.
package struct ELFSymbolTable: Sendable {
    /// One symbol: its virtual address in the file, its size and its (mangled) name.
    package struct Symbol: Sendable, Equatable {
        package let address: UInt64
        package let size: UInt64
        package let name: String
    }

    /// Symbols sorted by address, names as offsets into `names` (made into strings only when
    /// looked up: a large binary has hundreds of thousands).
    private let entries: [(address: UInt64, size: UInt64, name: UInt32)]
    private let names: [UInt8]

    /// Every symbol, sorted by address.
    package var symbols: [Symbol] { entries.map { Symbol(address: $0.address, size: $0.size, name: name(at: $0.name)) } }

    /// Reads the symbol table of `path` (at most 256 MiB of symbols and names).
    /// - Throws: ``ELFFile/Error`` when the file cannot be read as ELF or has no symbol table.
    package init(path: String) throws {
        guard let file = ReadOnlyFile(path: path) else { throw ELFFile.Error(path: path, reason: "cannot open") }
        func read(_ offset: UInt64, _ count: UInt64) -> [UInt8] {
            guard count > 0, count <= 256 << 20 else { return [] }
            return file.read(at: offset, count: Int(count))
        }
        let header = read(0, 64)
        guard header.count == 64, header[0] == 0x7F, header[1] == 0x45, header[2] == 0x4C, header[3] == 0x46,
              header[4] == 2, header[5] == 1 else { throw ELFFile.Error(path: path, reason: "not an ELF64 little-endian file") }
        let shoff = header.u64(at: 40), shentsize = UInt64(header.u16(at: 58)), shnum = UInt64(header.u16(at: 60))
        guard shoff > 0, shentsize == 64, shnum > 0, shnum <= 65535 else { throw ELFFile.Error(path: path, reason: "no section headers") }
        let sections = read(shoff, shentsize * shnum)
        guard UInt64(sections.count) == shentsize * shnum else { throw ELFFile.Error(path: path, reason: "truncated section headers") }
        func section(ofType type: UInt32) -> Int? {
            (0..<Int(shnum)).first { sections.u32(at: $0 * 64 + 4) == type && sections.u64(at: $0 * 64 + 32) > 0 }
        }
        guard let table = section(ofType: 2) ?? section(ofType: 11) else {   // SHT_SYMTAB, else SHT_DYNSYM
            throw ELFFile.Error(path: path, reason: "no symbol table")
        }
        let link = Int(sections.u32(at: table * 64 + 40))
        guard link < Int(shnum) else { throw ELFFile.Error(path: path, reason: "symbol table names a missing string table") }
        let raw = read(sections.u64(at: table * 64 + 24), sections.u64(at: table * 64 + 32))
        names = read(sections.u64(at: link * 64 + 24), sections.u64(at: link * 64 + 32))
        var entries: [(address: UInt64, size: UInt64, name: UInt32)] = []
        entries.reserveCapacity(raw.count / 24)
        raw.withUnsafeBytes { bytes in
            var offset = 0
            while offset + 24 <= bytes.count {
                defer { offset += 24 }
                let info = bytes[offset + 4]
                let type = info & 0xF
                let value = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self).littleEndian
                let size = bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self).littleEndian
                let shndx = bytes.loadUnaligned(fromByteOffset: offset + 6, as: UInt16.self).littleEndian
                guard value != 0, shndx != 0, type == 2 || (type == 0 && size > 0) else { continue }
                entries.append((value, size, bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian))
            }
        }
        entries.sort { $0.address < $1.address }
        self.entries = entries
    }

    private func name(at offset: UInt32) -> String {
        let start = Int(offset)
        guard start < names.count else { return "" }
        let end = names[start...].firstIndex(of: 0) ?? names.count
        return String(decoding: names[start..<end], as: UTF8.self)
    }

    /// The symbol `address` (a virtual address of the file) lies in: the last one starting at or
    /// before it, if the address is inside its size (or it has none).
    package func symbol(containing address: UInt64) -> Symbol? {
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].address <= address { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let found = entries[low - 1]
        guard found.size == 0 || address - found.address < found.size else { return nil }
        return Symbol(address: found.address, size: found.size, name: name(at: found.name))
    }
}

/// Tells whether addresses of a crashed process lie in Swift async functions from the symbol
/// tables of the images' files on this machine — those whose build-id matches the record's —
/// as Swift's backtracer does on Linux. Needs no symbolizer: what the next launch's reporter
/// uses where the toolchain is not installed. A stripped image (no `.symtab`) has none of its
/// local symbols, so its async frames cannot be told.
package final class ImageSymbols: @unchecked Sendable {
    // @unchecked: the cache is guarded by `lock`.
    private let images: [CrashImage]
    private var tables: [Int: (table: ELFSymbolTable, bias: UInt64)?] = [:]
    private let lock = Mutex(())

    /// Over the images of one record.
    package init(images: [CrashImage]) {
        self.images = images
    }

    /// The symbol an address lies in, if its image's file is here with the record's build-id.
    package func symbol(at address: UInt64) -> ELFSymbolTable.Symbol? {
        guard let index = images.firstIndex(where: { $0.contains(address) }), let loaded = table(index) else { return nil }
        return loaded.table.symbol(containing: address &- loaded.bias)
    }

    /// The demangled name of the function an address lies in (what the sinks print where a frame
    /// has no name of its own: a stuck request's frames, a hang's hottest places, OTLP's stack text).
    package func demangledName(at address: UInt64) -> String? {
        symbol(at: address).map { SwiftDemangler.demangle($0.name) }
    }

    /// The function an address lies in, with its first instruction's address in the process.
    package func function(at address: UInt64) -> (name: String, start: UInt64)? {
        guard let index = images.firstIndex(where: { $0.contains(address) }), let loaded = table(index),
              let symbol = loaded.table.symbol(containing: address &- loaded.bias), !symbol.name.isEmpty else { return nil }
        return (symbol.name, symbol.address &+ loaded.bias)
    }

    /// The frame at `address` of `record`, named from the symbol table: the function `lookup`
    /// (the address, or a return address's call) lies in; no name where none is known. What the
    /// sinks and, without a symbolizer, `crash-inspect` name frames with.
    package func named(_ address: UInt64, lookup: UInt64, in record: CrashRecord) -> SymbolicatedFrame {
        let image = record.image(containing: address)
        let offset = image.map { address &- $0.base }
        guard let found = function(at: lookup) else { return SymbolicatedFrame(address: address, image: image?.path, imageOffset: offset) }
        return SymbolicatedFrame(address: address, image: image?.path, imageOffset: offset, symbol: SwiftDemangler.demangle(found.name),
                                 mangledSymbol: found.name, functionStart: found.start)
    }

    /// For ``ThreadFrames/resolve(_:isAsyncFunction:)``.
    package func isAsyncFunction(_ addresses: [UInt64]) -> [Bool] {
        addresses.map { symbol(at: $0).map { SwiftAsyncSymbol.isAsyncFunction(mangledName: $0.name) } ?? false }
    }

    /// Tables already read in this process, with the first load address of their file, by path
    /// and build-id: the reporter builds one envelope per record, and the records of one app
    /// name the same files (a hit reads nothing).
    private static let shared = Mutex<[String: (table: ELFSymbolTable, firstLoad: UInt64)]>([:])

    /// True when `path` names a regular file (after symbolic links).
    static func isRegularFile(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
    }

    private func table(_ index: Int) -> (table: ELFSymbolTable, bias: UInt64)? {
        lock.withLock { _ in tableLocked(index) }
    }

    private func tableLocked(_ index: Int) -> (table: ELFSymbolTable, bias: UInt64)? {
        if let known = tables[index] { return known }
        let image = images[index]
        let key = image.path + "|" + image.buildIDHex
        var file = Self.shared.withLock { $0[key] }
        // The record is untrusted: only a regular file is opened (a FIFO would block, a device
        // would read forever), and only one whose build-id is the record's.
        if file == nil, !image.buildID.isEmpty,
           Self.isRegularFile(image.path),
           let elf = try? ELFFile(path: image.path), elf.buildID == image.buildID, let table = try? ELFSymbolTable(path: image.path) {
            file = (table, elf.firstLoadAddress)
            Self.shared.withLock { cache in
                if cache.count >= 32 { cache.removeAll() }
                cache[key] = (table, elf.firstLoadAddress)
            }
        }
        let loaded = file.map { (table: $0.table, bias: image.base &- $0.firstLoad) }
        tables[index] = loaded
        return loaded
    }
}
