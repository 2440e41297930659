// Latch.swift — a one-way gate carrying a value (the launch's result, this run's marker).
import HTTPExchange

/// A one-way gate carrying a value: closed until ``open(_:)``, then open for good with it.
// @unchecked: `value` is only touched under `condition`.
package final class Latch<Value: Sendable>: @unchecked Sendable {
    private let condition = ConditionLock()
    private var value: Value?

    package init() {}

    package func open(_ value: Value) {
        condition.withLock {
            self.value = value
            condition.broadcast()
        }
    }

    package func wait() -> Value {
        condition.withLock {
            while value == nil { condition.wait() }
            return value!
        }
    }

    /// Waits at most until `deadline`; the value if it came by then.
    @discardableResult
    package func wait(until deadline: SuspendingClock.Instant) -> Value? {
        condition.withLock {
            while value == nil && condition.wait(until: deadline) {}
            return value
        }
    }
}
