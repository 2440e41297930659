// BreadcrumbLogHandlerTests.swift — the breadcrumb handler composes with swift-log's own handlers.
@testable import CrashCapture
import Logging
import XCTest

final class BreadcrumbLogHandlerTests: XCTestCase {
    /// A handler that keeps what reaches it.
    // @unchecked: the logger calls the handler on the test's own thread only.
    final class Capture: @unchecked Sendable {
        var lines: [(message: String, metadata: Logger.Metadata)] = []
    }

    struct CapturingHandler: LogHandler {
        let capture: Capture
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            capture.lines.append((event.message.description, self.metadata.merging(event.metadata ?? [:]) { $1 }))
        }
    }

    func testInAMultiplexTheOtherHandlerStillGetsEveryLineWithTheLoggersMetadata() {
        let capture = Capture()
        var logger = Logger(label: "composed") { label in
            MultiplexLogHandler([BreadcrumbLogHandler(label: label, logLevel: .warning), CapturingHandler(capture: capture)])
        }
        logger.logLevel = .trace
        logger[metadataKey: "request"] = "42"
        logger.debug("below the breadcrumb level")
        logger.warning("at it", metadata: ["extra": "yes"])
        XCTAssertEqual(capture.lines.map(\.message), ["below the breadcrumb level", "at it"])
        XCTAssertEqual(capture.lines.last?.metadata["request"], "42")
        XCTAssertEqual(capture.lines.last?.metadata["extra"], "yes")
        // The breadcrumb handler keeps its own copy of the logger's metadata as well.
        var handler = BreadcrumbLogHandler(label: "alone")
        handler[metadataKey: "k"] = "v"
        XCTAssertEqual(handler.metadata["k"], "v")
        XCTAssertEqual(handler.logLevel, .info)
    }

    /// Every swift-log level is written as the record's level of the same name and place in
    /// swift-log's order (the numbers are cc_record.h's CC_BREADCRUMB_*).
    func testEverySwiftLogLevelBecomesTheRecordsLevelOfTheSameName() {
        for (index, level) in Logger.Level.allCases.enumerated() {
            XCTAssertEqual(BreadcrumbLevel(level).name, level.rawValue)
            XCTAssertEqual(BreadcrumbLevel(level).rawValue, UInt32(index), "\(level)")
            XCTAssertEqual(BreadcrumbLevel(rawValue: UInt32(index)), BreadcrumbLevel(level))
        }
    }
}
