// Wire.swift — the Sensors Analytics `/sa` request body: gzip, base64, crc and percent-encoding.
import CZlib
package import Foundation

/// The body of one upload, byte-compatible with Sensors Analytics' `/sa` endpoint:
/// `crc=<Java hashCode of the base64 text>&gzip=1&data_list=<percent-encoded base64(gzip(JSON array))>`.
package enum SensorsWire {
    /// Builds the form body for a batch of event JSON objects (each one complete JSON object text).
    /// - Throws: ``WireError`` if zlib fails (it does not for in-memory input short of OOM).
    package static func body(forEvents events: [String]) throws -> String {
        let array = "[" + events.joined(separator: ",") + "]"
        let zipped = try Gzip.compress(Data(array.utf8))
        let base64 = zipped.base64EncodedString()
        return "crc=\(javaHashCode(base64))&gzip=1&data_list=\(percentEncode(base64))"
    }

    /// Java's `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units, wrapping in Int32.
    package static func javaHashCode(_ text: String) -> Int32 {
        var hash: Int32 = 0
        for unit in text.utf16 { hash = hash &* 31 &+ Int32(unit) }
        return hash
    }

    /// Percent-encodes `text` for a form value the way Sensors' SDKs do: everything but ASCII
    /// letters, digits, `-._~` and `?` is escaped as `%XX` (uppercase) over UTF-8, so
    /// `:#[]@!$&'()*+,;=` and `/` are always escaped.
    package static func percentEncode(_ text: String) -> String {
        let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + text.utf8.count / 8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "?"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes a form body made by ``body(forEvents:)`` back to the JSON array text; `nil` when the
    /// body is malformed or the crc does not match. Used by tests and the benchmark's server.
    package static func decode(body: String) -> (crc: Int32, json: String)? {
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            fields[String(parts[0])] = String(parts[1])
        }
        guard let encoded = fields["data_list"], let base64 = encoded.removingPercentEncoding,
              let crcText = fields["crc"], let crc = Int32(crcText), crc == javaHashCode(base64),
              let zipped = Data(base64Encoded: base64) else { return nil }
        let raw: Data
        if fields["gzip"] == "1" {
            guard let unzipped = try? Gzip.decompress(zipped) else { return nil }
            raw = unzipped
        } else {
            raw = zipped
        }
        return (crc, String(decoding: raw, as: UTF8.self))
    }
}

/// zlib failed.
package struct WireError: Error, CustomStringConvertible {
    package let operation: String
    package let code: Int32
    package var description: String { "zlib \(operation) failed (\(code))" }
}

/// gzip (RFC 1952) through zlib: `deflateInit2` with windowBits 31.
package enum Gzip {
    /// gzip-compresses `data`.
    /// - Throws: ``WireError`` when zlib reports an error.
    package static func compress(_ data: Data) throws -> Data {
        var stream = z_stream()
        var rc = deflateInit2_(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY,
                               ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard rc == Z_OK else { throw WireError(operation: "deflateInit2", code: rc) }
        defer { deflateEnd(&stream) }
        var input = [UInt8](data)
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 64)
        let produced: Int = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = uInt(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = uInt(outBuffer.count)
                rc = deflate(&stream, Z_FINISH)
                return outBuffer.count - Int(stream.avail_out)
            }
        }
        guard rc == Z_STREAM_END else { throw WireError(operation: "deflate", code: rc) }
        return Data(output[0..<produced])
    }

    /// Decompresses gzip (or zlib) data.
    /// - Throws: ``WireError`` when the data is not valid gzip.
    package static func decompress(_ data: Data) throws -> Data {
        var stream = z_stream()
        var rc = inflateInit2_(&stream, 47, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard rc == Z_OK else { throw WireError(operation: "inflateInit2", code: rc) }
        defer { inflateEnd(&stream) }
        var input = [UInt8](data)
        var result = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        try input.withUnsafeMutableBufferPointer { inBuffer in
            stream.next_in = inBuffer.baseAddress
            stream.avail_in = uInt(inBuffer.count)
            repeat {
                let produced: Int = chunk.withUnsafeMutableBufferPointer { outBuffer in
                    stream.next_out = outBuffer.baseAddress
                    stream.avail_out = uInt(outBuffer.count)
                    rc = inflate(&stream, Z_NO_FLUSH)
                    return outBuffer.count - Int(stream.avail_out)
                }
                guard rc == Z_OK || rc == Z_STREAM_END else { throw WireError(operation: "inflate", code: rc) }
                result.append(contentsOf: chunk[0..<produced])
                if rc == Z_OK && produced == 0 && stream.avail_in == 0 { throw WireError(operation: "inflate (truncated)", code: rc) }
            } while rc != Z_STREAM_END
        }
        return result
    }
}

extension String {
    /// `self` (a JSON object) with `"_flush_time":ms` added as its last member.
    package func addingFlushTime(_ ms: Int64) -> String {
        guard let close = lastIndex(of: "}") else { return self }
        return String(self[..<close]) + ",\"_flush_time\":\(ms)}"
    }
}
