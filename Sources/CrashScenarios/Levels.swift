// Levels.swift — the fixed level1 → level5 call chain every scenario crashes under.
//
// @inline(never) keeps each level a real function in -O builds, and the work after each call
// keeps the call out of tail position, so no level's frame is replaced by the next (a tail
// call would make level1 vanish from the stack in release builds).
//
// Scenarios enter the chain through `throughLevels`, which calls level1 through a mutable global: the
// optimiser cannot see which closure reaches the levels, so it cannot clone them per scenario
// ("closure propagated" specialisations, which identical-code folding then merged into symbols
// without line information). The code each scenario runs inside level5 is still optimised.

nonisolated(unsafe) package var levelSink = 0

@inline(never) package func level1(_ body: () -> Void) { level2(body); levelSink &+= 1 }
@inline(never) package func level2(_ body: () -> Void) { level3(body); levelSink &+= 2 }
@inline(never) package func level3(_ body: () -> Void) { level4(body); levelSink &+= 3 }
@inline(never) package func level4(_ body: () -> Void) { level5(body); levelSink &+= 4 }
@inline(never) package func level5(_ body: () -> Void) { body(); levelSink &+= 5 }

/// How scenarios call level1: a variable, so the call is indirect in -O builds too.
nonisolated(unsafe) package var levelEntry: (() -> Void) -> Void = level1

/// Runs `body` inside level1 → level5.
@inline(never) package func throughLevels(_ body: () -> Void) { levelEntry(body); levelSink &+= 6 }

/// The level names innermost first, as they appear in a crashed thread's frames.
package let levelChain = ["level5", "level4", "level3", "level2", "level1"]

/// A value the optimiser cannot see through.
@inline(never) package func opaque<T>(_ value: T) -> T { value }
