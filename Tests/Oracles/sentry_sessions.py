#!/usr/bin/env python3
"""Reads Sentry envelope files with Sentry's own code and checks every session item in them.

Usage: sentry_sessions.py ENVELOPE...

- Each envelope is parsed by sentry_sdk.envelope.Envelope.deserialize (the Python SDK's parser).
- Each `session` item is checked against Relay's session update as its schema defines it
  (relay-event-schema's protocol/session.rs: `sid` a UUID, `status` one of ok, exited, crashed,
  abnormal, errored, RFC 3339 `started` and `timestamp`, `errors` and `seq` unsigned, `init` a
  bool, `duration` a non-negative number, `attrs.release` required and accepted by Relay's own
  release parser, sentry_relay.parse_release; the Python package exposes no session validator),
  and rebuilt with sentry_sdk's own Session model, whose JSON must say the same.
- Prints {"sessions": [{"file", "payload", "with_event"}], "errors": [...]} and exits 1 on any error.
"""
import json
import sys
import uuid
from datetime import datetime

from sentry_relay import parse_release
from sentry_sdk.envelope import Envelope
from sentry_sdk.session import Session

KEYS = {"sid", "did", "seq", "init", "started", "timestamp", "duration", "status", "errors", "attrs", "abnormal_mechanism"}
STATUSES = {"ok", "exited", "crashed", "abnormal", "errored"}


def time(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def check(session, where):
    errors = []
    unknown = set(session) - KEYS
    if unknown:
        errors.append(f"{where}: unknown keys {sorted(unknown)}")
    try:
        uuid.UUID(session["sid"])
    except (KeyError, ValueError, TypeError):
        errors.append(f"{where}: sid is not a UUID: {session.get('sid')!r}")
    if session.get("status") not in STATUSES:
        errors.append(f"{where}: status {session.get('status')!r}")
    try:
        started, ended = time(session["started"]), time(session["timestamp"])
        if started > ended:
            errors.append(f"{where}: started after timestamp")
    except (KeyError, ValueError, TypeError) as error:
        errors.append(f"{where}: started/timestamp: {error}")
    for key in ("errors", "seq"):
        if key in session and (not isinstance(session[key], int) or session[key] < 0):
            errors.append(f"{where}: {key} {session[key]!r}")
    if "init" in session and not isinstance(session["init"], bool):
        errors.append(f"{where}: init {session['init']!r}")
    if "duration" in session and (not isinstance(session["duration"], (int, float)) or session["duration"] < 0):
        errors.append(f"{where}: duration {session['duration']!r}")
    attrs = session.get("attrs") or {}
    release = attrs.get("release")
    if not release:
        errors.append(f"{where}: no attrs.release")
    else:
        try:
            parse_release(release)
        except Exception as error:  # sentry_relay raises its own error types
            errors.append(f"{where}: release {release!r}: {error}")
    environment = attrs.get("environment")
    if environment is not None and (not isinstance(environment, str) or not environment or len(environment) > 64
                                    or "/" in environment or "\n" in environment):
        errors.append(f"{where}: environment {environment!r}")
    if not errors:
        # sentry_sdk's own model, given the same fields, says the same.
        model = Session(sid=session["sid"], did=session.get("did"), timestamp=time(session["timestamp"]),
                        started=time(session["started"]), duration=session.get("duration"), status=session["status"],
                        release=release, environment=environment, errors=session["errors"])
        again = model.to_json()
        # (sentry_sdk leaves out `errors` when 0, `did` and `duration` when unknown.)
        defaults = {"errors": 0}
        for key in ("sid", "did", "status", "errors", "duration"):
            if str(again.get(key, defaults.get(key))) != str(session.get(key, defaults.get(key))):
                errors.append(f"{where}: sentry_sdk's Session says {key}={again.get(key)!r}, the item {session.get(key)!r}")
        if again.get("attrs", {}).get("release") != release:
            errors.append(f"{where}: sentry_sdk's Session release {again.get('attrs')}")
    return errors


def main():
    sessions, errors = [], []
    for path in sys.argv[1:]:
        with open(path, "rb") as handle:
            envelope = Envelope.deserialize(handle.read())
        types = [item.headers.get("type") for item in envelope.items]
        for index, item in enumerate(envelope.items):
            if item.headers.get("type") != "session":
                continue
            payload = json.loads(item.payload.get_bytes())
            errors += check(payload, f"{path} item {index}")
            sessions.append({"file": path, "payload": payload, "with_event": "event" in types})
    print(json.dumps({"sessions": sessions, "errors": errors}))
    if errors:
        print("\n".join(errors), file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
