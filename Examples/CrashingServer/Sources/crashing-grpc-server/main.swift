// crashing-grpc-server — a grpc-swift 2 server (HTTP/2 over SwiftNIO) with CrashCapture started and
// each RPC's crash context attached (CrashCaptureGRPC's CrashContextInterceptor), for the tests;
// and its client.
//
//   crashing-grpc-server [--dir DIR] [--port PORT] [--no-crash-context]   the server (DIR also from CRASH_DIR)
//   crashing-grpc-server client --port PORT --count N --crash K
//   crashing-grpc-server client --port PORT --load SECONDS [--concurrency C]   (scripts/server-rps.sh --grpc)
//
// The one service, `crashcapture.example.Orders`, has one unary method, `Get`, whose messages are
// plain UTF-8 text (no protobuf: a serializer of bytes): `Get("slow")` answers after ~2 s,
// `Get("crash")` dies of SIGSEGV in its handler after two async helpers that each suspend once,
// `Get("fast")` answers at once (the load). `--no-crash-context` leaves the interceptor out.
// The server prints `listening on 127.0.0.1:PORT` (flushed) once it accepts connections. The
// client sends N RPCs at once, RPC i with the metadata `x-request-id: rpc-<i>` and a
// `traceparent` whose trace id ends in i; RPC K asks for the crash, the others for `slow`. It
// prints each RPC's outcome and exits 0 when every RPC ended (the crash fails them all).
import CrashCapture
import CrashCaptureGRPC
import ExampleCrashes
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
#if canImport(Glibc)
import Glibc
#endif

/// The method's path: `/crashcapture.example.Orders/Get`.
let getOrder = MethodDescriptor(service: ServiceDescriptor(fullyQualifiedService: "crashcapture.example.Orders"), method: "Get")

/// Messages as UTF-8 text.
struct TextSerializer: MessageSerializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: String) throws -> Bytes { Bytes(Array(message.utf8)) }
}
struct TextDeserializer: MessageDeserializer {
    func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> String {
        serializedMessageBytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }
}

/// The `Get` handler, as generated code would call a service's method.
@inline(never) func getOrderHandler(_ request: ServerRequest<String>) async throws -> ServerResponse<String> {
    if request.message == "crash" {
        let value = await loadAccount(7)
        return ServerResponse(message: "not reached \(value)")
    }
    if request.message == "fast" { return ServerResponse(message: "fast") }
    try await Task.sleep(for: .seconds(2))
    return ServerResponse(message: "slow")
}

struct Orders: RegistrableRPCService {
    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        router.registerHandler(forMethod: getOrder, deserializer: TextDeserializer(), serializer: TextSerializer()) { request, context in
            let single = try await ServerRequest(stream: request)
            return StreamingServerResponse(single: try await getOrderHandler(single))
        }
    }
}

if CommandLine.arguments.dropFirst().first == "client" {
    let port = argument("--port").flatMap { Int($0) } ?? 0
    let count = argument("--count").flatMap { Int($0) } ?? 20
    let crashIndex = argument("--crash").flatMap { Int($0) } ?? 0
    let transport = try HTTP2ClientTransport.Posix(target: .ipv4(address: "127.0.0.1", port: port), transportSecurity: .plaintext)
    if let seconds = argument("--load").flatMap({ Double($0) }) {
        // The load: `concurrency` callers, each sending Get("fast") one after the other for
        // `seconds`; prints the RPCs answered per second.
        let concurrency = argument("--concurrency").flatMap { Int($0) } ?? 16
        let answered = try await withGRPCClient(transport: transport) { client in
            let end = ContinuousClock.now.advanced(by: .seconds(seconds))
            return await withTaskGroup(of: Int.self) { group in
                for _ in 0..<concurrency {
                    group.addTask {
                        var count = 0
                        while ContinuousClock.now < end {
                            let ok = (try? await client.unary(request: ClientRequest(message: "fast"), descriptor: getOrder, serializer: TextSerializer(),
                                                              deserializer: TextDeserializer(), options: .defaults) { try $0.message }) != nil
                            if ok { count += 1 }
                        }
                        return count
                    }
                }
                var total = 0
                for await count in group { total += count }
                return total
            }
        }
        print(String(format: "%.1f", Double(answered) / seconds))
        exit(0)
    }
    try await withGRPCClient(transport: transport) { client in
        await withTaskGroup(of: String.self) { group in
            for index in 0..<count {
                group.addTask {
                    var metadata: Metadata = ["x-request-id": "rpc-\(index)"]
                    metadata.addString(String(format: "00-4bf92f3577b34da6a3ce929d0e0e47%02x-00f067aa0ba902b7-01", index), forKey: "traceparent")
                    let request = ClientRequest(message: index == crashIndex ? "crash" : "slow", metadata: metadata)
                    do {
                        let answer = try await client.unary(request: request, descriptor: getOrder, serializer: TextSerializer(),
                                                            deserializer: TextDeserializer(), options: .defaults) { try $0.message }
                        return "rpc-\(index): \(answer)"
                    } catch {
                        return "rpc-\(index): failed (\(error))"
                    }
                }
            }
            for await line in group { print(line) }
        }
    }
    exit(0)
}

guard let directory = argument("--dir") ?? ProcessInfo.processInfo.environment["CRASH_DIR"] else {
    FileHandle.standardError.write(Data("usage: crashing-grpc-server --dir DIR [--port PORT] (or CRASH_DIR=DIR)\n".utf8))
    exit(2)
}
let started = try CrashHandler.start(.init(directory: directory, appName: "crashing-grpc-server", appVersion: "1.0"))
FileHandle.standardError.write(Data("crash capture: \(started)\n".utf8))

let server = GRPCServer(transport: .http2NIOPosix(address: .ipv4(host: "127.0.0.1", port: argument("--port").flatMap { Int($0) } ?? 0),
                                                  transportSecurity: .plaintext),
                        services: [Orders()],
                        interceptors: CommandLine.arguments.contains("--no-crash-context") ? [] : [CrashContextInterceptor()])
try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { try await server.serve() }
    guard let address = try await server.listeningAddress?.ipv4 else { fatalError("the server did not listen") }
    // One write(2), unbuffered: the test waits for this line.
    FileHandle.standardOutput.write(Data("listening on 127.0.0.1:\(address.port)\n".utf8))
    try await group.next()
}
