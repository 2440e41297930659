// Prelude.swift — what the README's and the DocC articles' code blocks take as given (a request
// type of the app's, its handler, some work). scripts/snippets.py writes each block beside this
// file as a function that is never called; scripts/test.sh builds this target, so a block that no
// longer compiles fails the tests. The generated files (Snippet_*.swift) are not committed.

/// The app's own request type, as a snippet without a framework has one.
struct MyRequest: Sendable {
    var id = ""
    var method = "GET"
    var path = "/"
    var headers: [String: String] = [:]
}

/// The app's own response type.
struct MyResponse: Sendable {}

/// The app's request handler.
func handle(_ request: MyRequest) async throws -> MyResponse { MyResponse() }

/// Some work of the app's.
func work() async throws {}

/// A job's id, path and incoming `traceparent`, as a snippet about other work uses them.
let id = "job-1"
let path = "/jobs/resize"
let traceparent: String? = nil
