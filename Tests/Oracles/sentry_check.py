#!/usr/bin/env python3
"""Reads a Sentry envelope file with Sentry's own code and prints a JSON summary.

Usage: sentry_check.py ENVELOPE

- The envelope is parsed by sentry_sdk.envelope.Envelope.deserialize (the Python SDK's parser).
- The event item is normalized by sentry_relay.StoreNormalizer (Relay's store normalization,
  the first thing Sentry does with an event), with the envelope header's sent_at.
- Prints {"headers", "items": [{"type", "headers", "length", "sha256"}], "event" (as sent),
  "normalized", "errors"} and exits 1 when normalization reports an error (the event's "errors"
  list, or any "_meta" entry with "err"), 2 when the envelope has no event item.
"""
import hashlib
import json
import sys

from sentry_relay import StoreNormalizer
from sentry_sdk.envelope import Envelope


def meta_errors(meta, path=""):
    """Every `err` entry anywhere in a `_meta` tree, with its path."""
    found = []
    if isinstance(meta, dict):
        for key, value in meta.items():
            if key == "":
                if isinstance(value, dict) and value.get("err"):
                    found.append({"path": path, "err": value["err"]})
            else:
                found += meta_errors(value, f"{path}.{key}" if path else str(key))
    return found


def main():
    with open(sys.argv[1], "rb") as handle:
        raw = handle.read()
    envelope = Envelope.deserialize(raw)
    items = []
    event = None
    for item in envelope.items:
        payload = item.payload.get_bytes()
        items.append({
            "type": item.type,
            "headers": item.headers,
            "length": len(payload),
            "sha256": hashlib.sha256(payload).hexdigest(),
        })
        if item.type == "event" and event is None:
            event = json.loads(payload)
    summary = {"headers": envelope.headers, "items": items, "event": event}
    if event is None:
        print(json.dumps(summary, indent=1, sort_keys=True))
        sys.exit(2)
    config = {"is_renormalize": False, "remove_other": True}
    if envelope.headers.get("sent_at"):
        config["sent_at"] = envelope.headers["sent_at"]
    normalized = StoreNormalizer(**config).normalize_event(event)
    errors = list(normalized.get("errors") or []) + meta_errors(normalized.get("_meta") or {})
    summary["normalized"] = normalized
    summary["errors"] = errors
    print(json.dumps(summary, indent=1, sort_keys=True))
    if errors:
        print("normalization errors: " + json.dumps(errors), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
