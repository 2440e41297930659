#!/usr/bin/env bash
# The "Deploying" recipe (CrashReporter.docc), checked without Docker (no Docker on the test machines). Programs that link
# CrashCapture, built the way Swift servers ship (`swift build -c release --static-swift-stdlib`),
# are copied into a minimal Debian 12 root filesystem (`debootstrap --variant=minbase bookworm`:
# what a bookworm-slim image holds) and run there with chroot, /proc mounted in a private mount
# namespace:
#  1. capture-only's ELF dependencies are a subset of a one-line Swift program's built the same
#     way (no libunwind, no liblzma), and the growth in size is printed (stripped and not);
#  2. in the bare root filesystem (no libunwind8, no debug files) capture-only starts, its crash
#     dies of SIGSEGV as it does with CRASHCAPTURE_DISABLE=1, and it leaves a complete record,
#     unwound by the binaries' own call-frame information down to _start (no note), which the
#     host's crash-inspect reads and symbolicates;
#  3. in a root filesystem with what sending needs (libcurl4, ca-certificates) and no libsqlite3-0
#     (a Sentry-only program links no SQLite: only SensorsAnalytics does), sentry-only (the
#     smallest CrashReporter adopter) starts, reports and exits 0, and the reporter's
#     crash-uploader (the inbox and the Sentry sink, as the next launch runs them) sends that
#     record to a loopback Sentry on the host, which receives the event, and the record is gone
#     from the directory.
# The root filesystems are made once and cached under $SLIM_ROOT_CACHE (default
# /var/cache/crashcapture: bookworm-minbase, about 30 s and 210 MB from deb.debian.org, and
# bookworm-sentry, the same plus the two packages); each run works in copies and removes them.
# Needs root (chroot, mount), debootstrap and unshare.
set -euo pipefail
cd "$(dirname "$0")/.."
cache_dir=${SLIM_ROOT_CACHE:-/var/cache/crashcapture}
base=$cache_dir/bookworm-minbase
sentry_base=$cache_dir/bookworm-sentry
out=$PWD/.build-slim
mkdir -p "$out"

for tool in debootstrap unshare chroot readelf strip; do
  command -v "$tool" >/dev/null || { echo "slim-image-check: $tool is missing (scripts/setup.sh installs it)" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "slim-image-check: needs root (chroot, mount)" >&2; exit 2; }

if [ ! -x "$base/bin/sh" ]; then
  echo "== debootstrap --variant=minbase bookworm into $base (once)"
  rm -rf "$base.tmp" && mkdir -p "$cache_dir"
  debootstrap --variant=minbase bookworm "$base.tmp" http://deb.debian.org/debian >"$out/debootstrap.log" 2>&1 || {
    tail -20 "$out/debootstrap.log" >&2; echo "slim-image-check: debootstrap failed" >&2; exit 1; }
  mv "$base.tmp" "$base"
fi
if [ ! -e "$sentry_base/usr/lib/x86_64-linux-gnu/libcurl.so.4" ]; then
  echo "== what sending to Sentry needs into $sentry_base (once): libcurl4, ca-certificates"
  rm -rf "$sentry_base.tmp" && cp -a "$base" "$sentry_base.tmp"
  cp /etc/resolv.conf "$sentry_base.tmp/etc/resolv.conf"
  unshare -m sh -c 'mount -t proc proc "$0/proc" && chroot "$0" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libcurl4 ca-certificates && apt-get clean"' \
    "$sentry_base.tmp" >"$out/sentry-packages.log" 2>&1 || {
    tail -20 "$out/sentry-packages.log" >&2; echo "slim-image-check: installing libcurl4 and ca-certificates failed" >&2; exit 1; }
  mv "$sentry_base.tmp" "$sentry_base"
fi

echo "== static-stdlib release builds (their own scratch path): capture-only, crash-uploader, sentry-only, a one-line program"
swift build -c release --static-swift-stdlib --scratch-path .build-static --product capture-only >"$out/build.log" 2>&1 &&
swift build -c release --static-swift-stdlib --scratch-path .build-static --product crash-uploader >>"$out/build.log" 2>&1 &&
swift build -c release --static-swift-stdlib --scratch-path .build-static --product sentry-only >>"$out/build.log" 2>&1 || {
  tail -30 "$out/build.log" >&2; exit 1; }
capture=.build-static/release/capture-only
uploader=.build-static/release/crash-uploader
sentry_only=.build-static/release/sentry-only
mkdir -p "$out/oneline/Sources/oneline"
cat >"$out/oneline/Package.swift" <<'SWIFT'
// swift-tools-version:6.2
import PackageDescription
let package = Package(name: "oneline", targets: [.executableTarget(name: "oneline")])
SWIFT
cat >"$out/oneline/Sources/oneline/main.swift" <<'SWIFT'
#if canImport(Glibc)
import Glibc
#endif
var line = "started: \(CommandLine.arguments.count)\n"
line.withUTF8 { _ = write(1, $0.baseAddress, $0.count) }
SWIFT
swift build -c release --static-swift-stdlib --package-path "$out/oneline" >>"$out/build.log" 2>&1 || { tail -30 "$out/build.log" >&2; exit 1; }
oneline=$out/oneline/.build/release/oneline

failures=0
fail() { echo "FAIL   $*"; failures=$((failures + 1)); }
needed() { readelf -d "$1" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | sort; }

echo "== what they need"
extra=$(comm -23 <(needed "$capture") <(needed "$oneline") | tr '\n' ' ')
echo "   capture-only:   $(needed "$capture" | tr '\n' ' ')"
echo "   one-line:       $(needed "$oneline" | tr '\n' ' ')"
echo "   crash-uploader: $(needed "$uploader" | tr '\n' ' ')"
echo "   sentry-only:    $(needed "$sentry_only" | tr '\n' ' ')"
if [ -n "$extra" ]; then fail "capture-only needs what a one-line program does not: $extra"
else echo "ok     capture-only needs nothing a one-line Swift program does not"; fi
if needed "$uploader" | grep -q 'libunwind\|liblzma'; then fail "crash-uploader needs libunwind or liblzma"
else echo "ok     crash-uploader needs no libunwind, no liblzma"; fi
for program in "$uploader" "$sentry_only"; do
  if needed "$program" | grep -q libsqlite3; then fail "$(basename "$program") needs libsqlite3"
  else echo "ok     $(basename "$program") needs no libsqlite3"; fi
done
strip -o "$out/capture.stripped" "$capture" && strip -o "$out/oneline.stripped" "$oneline"
size() { stat -c %s "$1"; }
mb() { awk -v b="$1" 'BEGIN { printf "%.2f MB", b / 1000000 }'; }
echo "   size: capture-only $(mb "$(size "$capture")") ($(mb "$(size "$out/capture.stripped")") stripped)," \
  "one-line $(mb "$(size "$oneline")") ($(mb "$(size "$out/oneline.stripped")") stripped):" \
  "+$(mb $(( $(size "$capture") - $(size "$oneline") ))), +$(mb $(( $(size "$out/capture.stripped") - $(size "$out/oneline.stripped") ))) stripped"

root=$out/root
cleanup() { rm -rf "$out/root"; [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null; true; }
trap cleanup EXIT

# fresh_root SOURCE: a copy of a cached root filesystem with the programs in /app.
fresh_root() {
  rm -rf "$root" && cp -a "$1" "$root"
  mkdir -p "$root/app" "$root/records"
  cp "$capture" "$uploader" "$sentry_only" "$root/app/"
}

# in_root COMMAND...: runs in the root filesystem with its own /proc; sets status.
in_root() {
  set +e
  # In a subshell whose own stderr is discarded: bash's "Segmentation fault" job notice.
  ( unshare -m sh -c 'mount -t proc proc "$0/proc" && exec chroot "$@"' "$root" "$root" "$@" \
      >"$out/stdout" 2>"$out/stderr"; exit $? ) 2>/dev/null
  status=$?
  set -e
}

swift build --product crash-inspect >"$out/inspect-build.log" 2>&1 || { tail -20 "$out/inspect-build.log" >&2; exit 1; }
inspect="$(swift build --show-bin-path)/crash-inspect"

# crash_and_read LABEL: the crash against its CRASHCAPTURE_DISABLE=1 run, then the record.
crash_and_read() {
  local label=$1
  rm -rf "$root/records" && mkdir -p "$root/records"
  CRASHCAPTURE_DISABLE=1 in_root /app/capture-only /records crash
  local reference=$status
  [ -z "$(ls -A "$root/records")" ] || fail "$label: CRASHCAPTURE_DISABLE=1 left a record"
  in_root /app/capture-only /records crash
  if [ "$status" -ne 139 ] || [ "$reference" -ne 139 ]; then
    fail "$label: status $status with capture, $reference without; expected 139 (SIGSEGV); stderr $(head -c 300 "$out/stderr")"
    return
  fi
  grep -q '^started: installed' "$out/stdout" || { fail "$label: capture did not start: $(head -c 300 "$out/stdout")"; return; }
  local records=("$root"/records/*.ccrec)
  if [ ! -f "${records[0]}" ] || [ ${#records[@]} -ne 1 ]; then
    fail "$label: expected one complete record, found: $(ls -A "$root/records" | tr '\n' ' ')"; return
  fi
  if ! "$inspect" show "${records[0]}" --symbols .build-static/release --json >"$out/show.json" 2>"$out/show.err"; then
    fail "$label: crash-inspect show: $(head -c 300 "$out/show.err")"; return
  fi
  local verdict
  if ! verdict=$(python3 - "$out/show.json" <<'PY'
import json, sys
record = json.load(open(sys.argv[1]))
problems = []
if record.get("complete") is not True: problems.append("record not complete")
if record.get("signal") != 11: problems.append(f"signal {record.get('signal')}")
crashed = [t for t in record.get("threads") or [] if t.get("crashed")]
names = [f.get("symbol") or "?" for f in (crashed[0].get("frames", []) if crashed else [])]
if not names or names[0] != "capture_only_main":
    problems.append(f"frame 0 is not capture_only_main: {names[:6]}")
if record.get("notes"): problems.append(f"notes: {record.get('notes')}")
if "_start" not in names: problems.append(f"the unwind did not reach _start: {names}")
if problems:
    print("; ".join(problems)); sys.exit(1)
print(" → ".join(names[:5]) + " … " + names[-1])
PY
  ); then
    fail "$label: $verdict"
  else
    echo "ok     $label: starts, dies of SIGSEGV as with CRASHCAPTURE_DISABLE=1, complete record: $verdict"
  fi
}

echo "== in the bare minbase root filesystem (no libunwind8)"
fresh_root "$base"
[ ! -e "$root/usr/lib/x86_64-linux-gnu/libunwind.so.8" ] || fail "the bare root filesystem has libunwind.so.8"
crash_and_read "bare image"

echo "== the reporter, Sentry only, in a root filesystem with libcurl4, ca-certificates and no libsqlite3-0"
fresh_root "$sentry_base"
if ls "$root"/usr/lib/x86_64-linux-gnu/libsqlite3.so* >/dev/null 2>&1; then fail "the root filesystem has libsqlite3"; fi
# Nothing pending in its own directory: it starts, its launch finds nothing, it exits (port 9: closed).
in_root /app/sentry-only /sentry-records http://k@127.0.0.1:9/1
if [ "$status" -ne 0 ] || ! grep -q '^started: installed sentry: on delivered: 0 errors: 0$' "$out/stdout"; then
  fail "sentry-only: status $status: $(head -c 300 "$out/stdout") $(tail -c 300 "$out/stderr")"
else
  echo "ok     sentry-only in the root filesystem: $(head -1 "$out/stdout")"
fi
in_root /app/capture-only /records crash
record=$(cd "$root/records" && ls -- *.ccrec 2>/dev/null | head -1 || true)
[ -n "$record" ] || fail "no record to send (status $status)"
rm -rf "$out/server" "$out/server.port"
# A loopback Sentry: every POST body (gunzipped when so sent) to a file; 200 with an event id.
python3 - "$out/server" <<'PY' &
import gzip, http.server, json, os, sys
directory = sys.argv[1]
os.makedirs(directory, exist_ok=True)
class Sentry(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        count = len(os.listdir(directory))
        with open(os.path.join(directory, f"{count}.envelope"), "wb") as f:
            f.write(self.path.encode() + b"\n" + body)
        answer = json.dumps({"id": "0" * 32}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Sentry)
with open(os.path.join(directory, "..", "server.port"), "w") as f:
    f.write(str(server.server_port))
server.serve_forever()
PY
server_pid=$!
# Up to 30 s: on a loaded machine (the tests' builds beside it) python's start can take seconds.
for _ in $(seq 600); do [ -s "$out/server.port" ] && break; sleep 0.05; done
[ -s "$out/server.port" ] || fail "the loopback Sentry (python3) did not start in 30 s"
port=$(cat "$out/server.port" 2>/dev/null || echo 9)
if [ -n "$record" ]; then
  CRASHCAPTURE_UPLOAD_DSN="http://public@127.0.0.1:$port/42" in_root /app/crash-uploader --directory /records --record "$record"
  envelopes=("$out"/server/*.envelope)
  if [ "$status" -ne 0 ]; then
    fail "crash-uploader: status $status: $(tail -c 400 "$out/stderr")"
  elif [ ! -f "${envelopes[0]}" ]; then
    fail "the loopback Sentry received nothing"
  elif ! grep -q '"type":"event"' "${envelopes[0]}" || ! grep -q 'SIGSEGV' "${envelopes[0]}"; then
    fail "the envelope holds no SIGSEGV event: $(head -c 300 "${envelopes[0]}")"
  elif [ -e "$root/records/$record" ]; then
    fail "the record is still in the directory after Sentry (the only sink) had it"
  else
    echo "ok     crash-uploader in the root filesystem sent the record to the loopback Sentry ($(head -1 "${envelopes[0]}")), and the record is gone"
  fi
fi

if [ "$failures" -ne 0 ]; then echo "slim-image-check: $failures failed"; exit 1; fi
echo "slim-image-check: all passed"
