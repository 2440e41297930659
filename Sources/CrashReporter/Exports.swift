// Exports.swift — what `import CrashReporter` names beyond its own declarations: the Sentry
// sink's retry policy. Nothing of the analytics (that is `import SensorsAnalytics`).
@_exported public import struct HTTPExchange.UploadPolicy
