#!/usr/bin/env python3
"""Decodes an OTLP/HTTP logs request body with OpenTelemetry's own schema (opentelemetry-proto).

Usage: otlp_logs.py BODY_FILE
       otlp_logs.py --response REJECTED MESSAGE

The second form prints, as hex, the ExportLogsServiceResponse a collector answers a partial
success with (partial_success.rejected_log_records = REJECTED, error_message = MESSAGE).

The body (gzip when it starts with gzip's magic) is parsed as an
opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest. Prints JSON:
  {"gzip": bool, "unknown_fields": [...], "canonical": bool,
   "resource_logs": [{"resource": {key: value}, "scope": {"name", "version"},
                      "records": [{"time_unix_nano", "observed_time_unix_nano", "severity_number",
                                   "severity_number_name", "severity_text", "event_name", "body",
                                   "trace_id", "span_id", "flags", "attributes": {key: value}}]}],
   "json": <google.protobuf.json_format.MessageToDict of the request>}
Values are AnyValue made Python: arrays as lists, kvlists as dicts, bytes as hex. "canonical" says
whether protobuf serializes the parsed message back to the same bytes; "unknown_fields" lists any
field number the schema does not know (both say the body was written with the schema's numbers).
A body that does not parse exits 1 with the parser's error on stderr.
"""
import gzip
import json
import sys

from google.protobuf import json_format
from google.protobuf.unknown_fields import UnknownFieldSet
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.logs.v1.logs_pb2 import SeverityNumber


def value(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in any_value.kvlist_value.values}
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    if kind is None:
        return None
    return getattr(any_value, kind)


def unknown(message, path, found):
    """Every unknown field in message and the messages inside it."""
    for field in UnknownFieldSet(message):
        found.append(f"{path}#{field.field_number}")
    for descriptor, content in message.ListFields():
        if descriptor.message_type is None:
            continue
        repeated = descriptor.is_repeated if hasattr(descriptor, "is_repeated") else descriptor.label == descriptor.LABEL_REPEATED
        items = content if repeated else [content]
        for index, item in enumerate(items):
            unknown(item, f"{path}.{descriptor.name}[{index}]", found)


def main():
    if sys.argv[1] == "--response":
        response = ExportLogsServiceResponse()
        response.partial_success.rejected_log_records = int(sys.argv[2])
        response.partial_success.error_message = sys.argv[3]
        print(response.SerializeToString().hex())
        return
    raw = open(sys.argv[1], "rb").read()
    compressed = raw[:2] == b"\x1f\x8b"
    body = gzip.decompress(raw) if compressed else raw
    request = ExportLogsServiceRequest()
    request.ParseFromString(body)
    found = []
    unknown(request, "request", found)
    out = {"gzip": compressed, "unknown_fields": found,
           "canonical": request.SerializeToString(deterministic=True) == body, "resource_logs": []}
    for resource_logs in request.resource_logs:
        entry = {"resource": {kv.key: value(kv.value) for kv in resource_logs.resource.attributes}, "scopes": []}
        for scope_logs in resource_logs.scope_logs:
            records = []
            for record in scope_logs.log_records:
                records.append({
                    "time_unix_nano": record.time_unix_nano,
                    "observed_time_unix_nano": record.observed_time_unix_nano,
                    "severity_number": record.severity_number,
                    "severity_number_name": SeverityNumber.Name(record.severity_number),
                    "severity_text": record.severity_text,
                    "event_name": record.event_name,
                    "body": value(record.body),
                    "trace_id": record.trace_id.hex(),
                    "span_id": record.span_id.hex(),
                    "flags": record.flags,
                    "attributes": {kv.key: value(kv.value) for kv in record.attributes},
                })
            entry["scopes"].append({"name": scope_logs.scope.name, "version": scope_logs.scope.version, "records": records})
        out["resource_logs"].append(entry)
    out["json"] = json_format.MessageToDict(request, preserving_proto_field_name=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
