#!/usr/bin/env python3
"""Prints the envelope header's `trace` (the dynamic sampling context) sentry_sdk writes for an
error captured while serving a request that continued a trace.

Usage: sentry_dsc.py DSN RELEASE TRACEPARENT

- TRACEPARENT is a W3C traceparent (00-<trace id>-<parent span id>-<flags>); sentry_sdk continues
  it as the `sentry-trace` header it carries the same ids in (`<trace id>-<parent id>-<sampled>`),
  without baggage, so this SDK is the head of the dynamic sampling context.
- A transaction for the request is started (traces_sample_rate 1.0) and an error is captured in
  it, as a server SDK does for a request that fails; nothing is sent (the envelope is kept by a
  transport of this script's).
- Prints {"headers": the error envelope's headers} as JSON.
"""
import json
import sys

import sentry_sdk
from sentry_sdk.transport import Transport


class Keep(Transport):
    envelopes = []

    def capture_envelope(self, envelope):
        Keep.envelopes.append(envelope)


def main():
    dsn, release, traceparent = sys.argv[1:4]
    _, trace_id, parent_id, flags = traceparent.split("-")
    sampled = "1" if int(flags, 16) & 1 else "0"
    sentry_sdk.init(dsn=dsn, release=release, traces_sample_rate=1.0, transport=Keep, default_integrations=False)
    transaction = sentry_sdk.continue_trace({"sentry-trace": f"{trace_id}-{parent_id}-{sampled}"},
                                            op="http.server", name="GET /orders/{id}", source="route")
    with sentry_sdk.start_transaction(transaction):
        sentry_sdk.capture_message("crashed", level="fatal")
    sentry_sdk.flush()
    errors = [e for e in Keep.envelopes if any(item.type == "event" for item in e.items)]
    print(json.dumps({"headers": errors[0].headers}, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
