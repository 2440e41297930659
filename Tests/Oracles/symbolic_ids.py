#!/usr/bin/env python3
"""Prints the ids Sentry's symbolic computes for ELF files: {path: {"code_id", "debug_id"}}.

Usage: symbolic_ids.py FILE...

symbolic.debuginfo.Archive.open(path) -> the first object's code_id (None without a GNU build-id)
and debug_id (from the build-id, else the XOR of the first page of .text). A file symbolic cannot
open gets {"error": "..."}.
"""
import json
import sys

from symbolic.debuginfo import Archive


def ids(path):
    try:
        objects = list(Archive.open(path).iter_objects())
    except Exception as error:  # noqa: BLE001 - reported, not hidden
        return {"error": f"{type(error).__name__}: {error}"}
    if not objects:
        return {"error": "no objects"}
    obj = objects[0]
    return {
        "code_id": None if obj.code_id is None else str(obj.code_id),
        "debug_id": str(obj.debug_id),
        "arch": obj.arch,
        "file_format": obj.file_format,
    }


print(json.dumps({path: ids(path) for path in sys.argv[1:]}, indent=1, sort_keys=True))
