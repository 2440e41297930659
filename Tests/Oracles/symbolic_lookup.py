#!/usr/bin/env python3
"""symbolic_lookup.py FILE ADDR... — what Sentry's `symbolic` (PyPI) finds at each address.

FILE is an ELF binary or a separate debug file; each ADDR (hex, 0x-prefixed or not) is relative to
the object's load address (for a PIE: the offset from the image's base; what llvm-symbolizer's
--obj takes). The caller does any "return address minus one" adjustment itself: the address is
looked up as given.

Prints one JSON object: {"arch", "debug_id", "code_id", "features", "lookups": [...]}, where each
lookup is {"addr": "0x...", "frames": [{"symbol", "line", "file", "lang"}, ...]} innermost
(inlined) first, as symbolic returns them; "frames" is empty when symbolic finds nothing.
Names are printed as symbolic stores them (no demangling here).
"""
import json
import sys

from symbolic.debuginfo import Archive


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    path, addresses = sys.argv[1], sys.argv[2:]
    archive = Archive.open(path)
    objects = list(archive.iter_objects())
    if len(objects) != 1:
        print(f"{path}: {len(objects)} objects, expected 1", file=sys.stderr)
        return 1
    obj = objects[0]
    symcache = obj.make_symcache()
    lookups = []
    for text in addresses:
        addr = int(text, 16)
        frames = [
            {"symbol": loc.symbol, "line": loc.line, "file": loc.full_path, "lang": loc.lang}
            for loc in symcache.lookup(addr)
        ]
        lookups.append({"addr": hex(addr), "frames": frames})
    print(json.dumps({
        "arch": obj.arch, "debug_id": obj.debug_id, "code_id": obj.code_id,
        "features": sorted(obj.features), "lookups": lookups,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
