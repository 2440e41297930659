// HostFactsNames.swift — the HostFacts declarations Tracker.swift uses (the clocks, the process
// identity, the OOM-kill counter), made visible to it without an import of its own: Tracker.swift
// is being moved into the analytics module by another change and is not edited here. Delete this
// file once Tracker.swift has `import HostFacts`. (An exported import is the only way to reach
// another file of the module: under MemberImportVisibility a typealias would not carry the
// members. Scoped to those four names so that clients of this module see no more of HostFacts.)
@_exported import enum HostFacts.Clock
@_exported import enum HostFacts.OOMKillCounter
@_exported import struct HostFacts.OOMKillReading
@_exported import struct HostFacts.ProcessIdentity
