#!/usr/bin/env python3
"""A stand-in for a Sensors Analytics /sa endpoint and a Sentry envelope endpoint on 127.0.0.1,
for the demo only.

/sa: decodes each POST (form body: crc, gzip=1, data_list = percent-encoded base64 of a gzipped
JSON array), checks the crc (Java String.hashCode of the base64 text), prints one line per
event and answers 200. /api/<project>/envelope/: prints the envelope's event (id, exception) and
attachment, answers 200. Writes its port to the file given as the first argument; stops by
itself after the number of seconds given as the second (default 120)."""
import base64, gzip, json, sys, threading, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def java_hash(text):
    raw, h = text.encode("utf-16-le"), 0
    for i in range(0, len(raw), 2):
        h = (31 * h + int.from_bytes(raw[i:i + 2], "little")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        if "/envelope/" in self.path:
            return self.envelope(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        form = urllib.parse.parse_qs(body)
        data = form["data_list"][0]
        ok = int(form["crc"][0]) == java_hash(data)
        events = json.loads(gzip.decompress(base64.b64decode(data)))
        for e in events:
            props = e.get("properties", {})
            extra = ""
            if e["event"] == "AppCrashed":
                extra = " reason=" + str(props.get("app_crashed_reason", "")).splitlines()[0][:70]
            if e["event"] == "$AppEnd":
                extra = " $event_duration=%s%s" % (props.get("$event_duration"), " (" + props["$app_end_reason"] + ")" if "$app_end_reason" in props else "")
            print("   server got %-10s _track_id=%s%s" % (e["event"], e["_track_id"][:8], extra), flush=True)
        print("   server: batch of %d events, crc %s" % (len(events), "ok" if ok else "MISMATCH"), flush=True)
        self.send_response(200 if ok else 400)
        self.end_headers()

    def envelope(self, raw):
        header, rest = raw.split(b"\n", 1)
        while rest.strip():
            item_header, rest = rest.split(b"\n", 1)
            item = json.loads(item_header)
            payload, rest = rest[:item["length"]], rest[item["length"] + 1:]
            if item["type"] == "event":
                exception = json.loads(payload)["exception"]["values"][0]
                print("   sentry got event %s  %s: %s" % (json.loads(header)["event_id"][:8], exception["type"],
                                                         exception["value"].splitlines()[0][:70]), flush=True)
            else:
                print("   sentry got %s %s (%d bytes)" % (item["type"], item.get("filename", ""), len(payload)), flush=True)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1], "w") as f:
    f.write(str(server.server_address[1]))
threading.Timer(float(sys.argv[2]) if len(sys.argv) > 2 else 120, server.shutdown).start()
server.serve_forever()
