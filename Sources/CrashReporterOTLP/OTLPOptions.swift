// OTLPOptions.swift — what the app says of its OpenTelemetry collector: the logs endpoint, its
// headers and compression, the resource. Defaults are the OTLP exporter's standard variables
// (CrashOTLP's OTLPEnvironment). The reporter's configuration holds one
// (`CrashReporting.Configuration.otlp`); what every sink shares (the data policy) stays the reporter's.
package import CrashOTLP
public import HTTPExchange
#if canImport(Glibc)
import Glibc
#endif

/// Crashes (and hangs) sent to an OpenTelemetry collector, each as one OTLP log record (event
/// `app.crash`, severity FATAL), over OTLP/HTTP in protobuf. Every field but the endpoint
/// defaults to the OTLP exporter's variables (`OTEL_EXPORTER_OTLP_HEADERS`, `…_COMPRESSION`,
/// `…_TIMEOUT`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), as OpenTelemetry's SDKs read them.
public struct OTLPOptions: Sendable {
    /// The logs endpoint, used as it is (`…/v1/logs`). A URL that is not http(s) keeps the
    /// records, the reason in the sink's report.
    public var logsEndpoint: String
    /// Headers sent with each request (an API key). Defaults to `OTEL_EXPORTER_OTLP_HEADERS` and
    /// `OTEL_EXPORTER_OTLP_LOGS_HEADERS` (`key=value,…`, values percent-decoded).
    public var headers: [String: String]
    /// gzip the requests. Defaults to whether `OTEL_EXPORTER_OTLP_LOGS_COMPRESSION` (else
    /// `OTEL_EXPORTER_OTLP_COMPRESSION`) is `gzip`.
    public var gzip: Bool
    /// The resource's `service.name`. Defaults to `OTEL_SERVICE_NAME`; nil: the app's name.
    public var serviceName: String?
    /// More resource attributes (`deployment.environment.name`, …). Defaults to `OTEL_RESOURCE_ATTRIBUTES`.
    public var resourceAttributes: [String: String]
    /// Retries and timeouts; `requestTimeout` defaults to `OTEL_EXPORTER_OTLP_LOGS_TIMEOUT` (else
    /// `OTEL_EXPORTER_OTLP_TIMEOUT`) milliseconds, else 10 s.
    public var upload: UploadPolicy

    /// Crashes sent to `logsEndpoint`; everything else from the environment.
    public init(logsEndpoint: String) {
        self.init(logsEndpoint: logsEndpoint, environment: Self.environment())
    }

    /// What the OTLP exporter's variables ask for (nil when they name no logs endpoint, or
    /// `OTEL_LOGS_EXPORTER` is `none`): this process's, or those `environment` read.
    package static func fromEnvironment(_ environment: OTLPEnvironment? = nil) -> OTLPOptions? {
        let environment = environment ?? Self.environment()
        return environment.logsEndpoint.map { OTLPOptions(logsEndpoint: $0, environment: environment) }
    }

    /// Crashes sent to `logsEndpoint` with these retries and timeouts (tests).
    package init(logsEndpoint: String, upload: UploadPolicy) {
        self.init(logsEndpoint: logsEndpoint)
        self.upload = upload
    }

    /// Crashes sent to `logsEndpoint`; everything else as `environment` says.
    package init(logsEndpoint: String, environment: OTLPEnvironment) {
        self.logsEndpoint = logsEndpoint
        headers = environment.headers
        gzip = environment.gzip
        serviceName = environment.serviceName
        resourceAttributes = environment.resourceAttributes
        upload = UploadPolicy()
        upload.requestTimeout = .milliseconds(environment.timeoutMilliseconds)
    }

    private static func environment() -> OTLPEnvironment {
        OTLPEnvironment { name in getenv(name).map { String(cString: $0) } }
    }
}
