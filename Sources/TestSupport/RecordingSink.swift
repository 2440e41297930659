// RecordingSink.swift — a sink of the test's own, for the tests of the reporter's part (the inbox,
// the ledger, what a record waits for): it notes what the reporter gave it and answers as the test
// says, where a real second sink (the analytics' store, an app's own) would only be in the way.
package import RecordDelivery
import Synchronization

/// A ``CrashRecordSink`` that keeps every record and ended run it is given, in order, and answers
/// each record `.delivered` (it has it), `.accepted` (it has taken it, and acknowledges it when
/// the test calls ``acknowledge(_:)``) or `.later(reason:)`, as the test chose.
package final class RecordingSink: CrashRecordSink {
    package let id: RecordSinkID

    private struct State {
        var records: [InboxRecord] = []
        var runs: [EndedRun] = []
        var answer: SinkResult
        var answers: [String: SinkResult]
        var receipts: [String: SinkReceipt] = [:]
    }
    private let state: Mutex<State>

    /// A sink named `id` (1–32 of `a-z`, `0-9`, `-`, `_`) that answers `answer`, but for the records
    /// named in `answers`.
    package init(_ id: String, answering answer: SinkResult = .delivered, answers: [String: SinkResult] = [:]) {
        guard let sinkID = RecordSinkID(id) else { preconditionFailure("\(id) is not a sink name") }
        self.id = sinkID
        state = Mutex(State(answer: answer, answers: answers))
    }

    package func take(_ record: InboxRecord, receipt: SinkReceipt) -> SinkResult {
        state.withLock { state in
            state.records.append(record)
            let answer = state.answers[record.name] ?? state.answer
            if answer == .accepted { state.receipts[record.name] = receipt }
            return answer
        }
    }

    package func takeRuns(_ runs: [EndedRun]) -> Bool {
        state.withLock { $0.runs += runs }
        return true
    }

    /// From now on, the answer for the record `name`.
    package func answer(_ answer: SinkResult, for name: String) {
        state.withLock { $0.answers[name] = answer }
    }

    /// Acknowledges the record `name`, which it accepted; false when it holds no receipt for it.
    @discardableResult
    package func acknowledge(_ name: String) -> Bool {
        guard let receipt = state.withLock({ $0.receipts.removeValue(forKey: name) }) else { return false }
        receipt.acknowledge()
        return true
    }

    /// Every record it was given, in order (a record offered again is there again).
    package var records: [InboxRecord] { state.withLock { $0.records } }
    /// Their names.
    package var names: [String] { records.map(\.name) }
    /// The names of those the reader rejected.
    package var unreadable: [String] {
        records.filter { if case .failure = $0.record { true } else { false } }.map(\.name)
    }
    /// Every ended run it was given, in order.
    package var runs: [EndedRun] { state.withLock { $0.runs } }
}
