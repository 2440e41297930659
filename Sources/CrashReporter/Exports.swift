// Exports.swift — what `import CrashReporter` names beyond its own declarations: capture, which
// the product includes (CrashHandler, its breadcrumbs and the app's scope, CrashContext, and the
// record types a sink reads, which CrashCapture re-exports from CrashRecordFormat), the sink
// contract (CrashRecordSink and what a sink is given, CrashDataPolicy: RecordDelivery), and the
// sinks' retry policy, and the options of this package's own sinks (SentryOptions, OTLPOptions,
// each declared beside its sink). Nothing of the analytics (that is `import SensorsAnalytics`).
@_exported public import CrashCapture
@_exported public import RecordDelivery
@_exported public import struct HTTPExchange.UploadPolicy
@_exported public import struct CrashReporterSentry.SentryOptions
@_exported public import struct CrashReporterOTLP.OTLPOptions
