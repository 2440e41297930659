// Collected.swift — values a callback or a server thread hands to the test, read back in order.
import Synchronization

/// Values appended from any thread (an identity callback, a server's policy), read in the order
/// they were appended.
package final class Collected<Element: Sendable>: Sendable {
    private let values = Mutex<[Element]>([])

    package init() {}

    package func append(_ value: Element) { values.withLock { $0.append(value) } }

    /// Everything appended so far.
    package var all: [Element] { values.withLock { $0 } }
}
