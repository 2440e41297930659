// CrashDataPolicyTests.swift — the data policy as the crash-time uploader receives it (its
// `--data` argument) and as the event and the attached record apply it.
@testable import CrashReporter
import CrashRecordFormat
import XCTest

final class CrashDataPolicyTests: XCTestCase {
    /// Every combination of the eight settings survives the uploader's argument unchanged.
    func testEveryPolicyRoundTripsThroughTheUploadersArgument() throws {
        for bits in 0..<(1 << 8) {
            let on = (0..<8).map { bits & (1 << $0) != 0 }
            let policy = CrashDataPolicy(rawMemory: on[0], breadcrumbs: on[1], identity: on[2], fullPaths: on[3], hostDetails: on[4],
                                         requestQuery: on[5], requestAttributes: on[6], functionNames: on[7])
            XCTAssertEqual(CrashDataPolicy(argument: policy.argument), policy, policy.argument)
        }
        XCTAssertEqual(CrashDataPolicy(argument: "none"), CrashDataPolicy(hostDetails: false, functionNames: false))
        XCTAssertEqual(CrashDataPolicy().argument, "host-details,function-names")
        XCTAssertEqual(CrashDataPolicy.everything.argument,
                       "raw-memory,breadcrumbs,identity,full-paths,host-details,request-query,request-attributes,function-names")
        for refused in ["", "query", "request-query,bogus", "everything"] {
            XCTAssertNil(CrashDataPolicy(argument: refused), refused)
        }
    }

    /// The request settings are off by default, on in `.everything`, and reach the redaction
    /// (which the event's minimisation reads too); `.everything` keeps the record whole.
    func testTheRequestSettingsAreOffByDefaultAndReachTheRedaction() {
        XCTAssertFalse(CrashDataPolicy().requestQuery)
        XCTAssertFalse(CrashDataPolicy().requestAttributes)
        XCTAssertEqual(CrashDataPolicy(requestQuery: true).redaction, RecordRedaction(requestQuery: true))
        XCTAssertEqual(CrashDataPolicy(requestAttributes: true).redaction, RecordRedaction(requestAttributes: true))
        XCTAssertEqual(CrashDataPolicy.everything.redaction, .everything)
        XCTAssertTrue(CrashDataPolicy.everything.redaction.keepsEverything)
        var almost = CrashDataPolicy.everything
        almost.requestAttributes = false
        XCTAssertFalse(almost.redaction.keepsEverything)
    }
}
