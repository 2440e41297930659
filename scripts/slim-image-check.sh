#!/usr/bin/env bash
# The README's "Deploying" recipe, checked without Docker: a program that links CrashCapture, built
# the way Swift servers ship (`swift build -c release --static-swift-stdlib`), copied into a
# minimal Debian 12 root filesystem (`debootstrap --variant=minbase bookworm`: what a
# bookworm-slim image holds) and run there with chroot, /proc mounted in a private mount
# namespace. It checks what the README says:
#  1. in the bare root filesystem the program does not start, and the loader names libunwind.so.8
#     (the one runtime library capture adds; liblzma.so.5, which it needs, is already there);
#  2. with Debian's libunwind8 package added (the runtime stage's one `apt-get install`), it starts,
#     its crash dies of SIGSEGV as it would without capture, and it leaves a complete record,
#     which the host's crash-inspect reads and symbolicates (capture-only's own frames).
# The root filesystem is made once and cached in $SLIM_ROOT_CACHE (default
# /var/cache/crashcapture/bookworm-minbase; about 30 s and 210 MB from deb.debian.org); each run
# works in a copy of it and removes the copy. Needs root (chroot, mount), debootstrap and unshare.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${SLIM_ROOT_CACHE:-/var/cache/crashcapture/bookworm-minbase}
out=.build-slim
mkdir -p "$out"

for tool in debootstrap unshare chroot; do
  command -v "$tool" >/dev/null || { echo "slim-image-check: $tool is missing (scripts/setup.sh installs it)" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "slim-image-check: needs root (chroot, mount)" >&2; exit 2; }

if [ ! -x "$cache/bin/sh" ]; then
  echo "== debootstrap --variant=minbase bookworm into $cache (once)"
  rm -rf "$cache.tmp" && mkdir -p "$(dirname "$cache")"
  debootstrap --variant=minbase bookworm "$cache.tmp" http://deb.debian.org/debian >"$out/debootstrap.log" 2>&1 || {
    tail -20 "$out/debootstrap.log" >&2; echo "slim-image-check: debootstrap failed" >&2; exit 1; }
  mv "$cache.tmp" "$cache"
fi

echo "== capture-only, release, --static-swift-stdlib (its own scratch path)"
swift build -c release --static-swift-stdlib --scratch-path .build-static --product capture-only >"$out/build.log" 2>&1 || {
  tail -30 "$out/build.log" >&2; exit 1; }
program=.build-static/release/capture-only
needed=$(readelf -d "$program" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
echo "   needs: $needed"

failures=0
fail() { echo "FAIL   $*"; failures=$((failures + 1)); }

root=$out/root
cleanup() { rm -rf "$root"; }
trap cleanup EXIT
rm -rf "$root" && cp -a "$cache" "$root"
mkdir -p "$root/app" "$root/records"
cp "$program" "$root/app/capture-only"

# in_root COMMAND...: runs in the root filesystem with its own /proc; sets status, out, err.
in_root() {
  set +e
  # In a subshell whose own stderr is discarded: bash's "Segmentation fault" job notice.
  ( unshare -m sh -c 'mount -t proc proc "$0/proc" && exec chroot "$@"' "$root" "$root" "$@" \
      >"$out/stdout" 2>"$out/stderr"; exit $? ) 2>/dev/null
  status=$?
  set -e
}

echo "== in the bare minbase root filesystem"
in_root /app/capture-only /records
if [ "$status" -eq 127 ] && grep -q 'libunwind.so.8' "$out/stderr"; then
  echo "ok     does not start: the loader names libunwind.so.8 (README: the runtime image needs libunwind8)"
else
  fail "expected the loader to refuse for libunwind.so.8; status $status, stderr: $(head -c 300 "$out/stderr")"
fi

echo "== with libunwind8 added (the README's runtime stage)"
(cd "$out" && rm -f libunwind8_*.deb && apt-get download -qq libunwind8 >/dev/null 2>&1) || {
  echo "slim-image-check: apt-get download libunwind8 failed" >&2; exit 1; }
cp "$out"/libunwind8_*.deb "$root/tmp/"
in_root sh -c 'dpkg -i /tmp/libunwind8_*.deb'
[ "$status" -eq 0 ] || fail "dpkg -i libunwind8 in the root filesystem: status $status: $(tail -c 300 "$out/stderr")"

in_root /app/capture-only /records
if [ "$status" -eq 0 ] && grep -q '^started: ' "$out/stdout"; then
  echo "ok     starts: $(head -1 "$out/stdout")"
else
  fail "capture-only did not start: status $status, stdout $(head -c 200 "$out/stdout"), stderr $(head -c 300 "$out/stderr")"
fi

# The reference: the same crash with capture off (CRASHCAPTURE_DISABLE=1), then with it on.
CRASHCAPTURE_DISABLE=1 in_root /app/capture-only /records crash
reference=$status
if [ -n "$(ls -A "$root/records")" ]; then fail "CRASHCAPTURE_DISABLE=1 left a record"; fi
in_root /app/capture-only /records crash
if [ "$status" -eq 139 ] && [ "$reference" -eq 139 ]; then
  echo "ok     crash: died of SIGSEGV (status 139), as with CRASHCAPTURE_DISABLE=1"
else
  fail "crash: status $status with capture, $reference without; expected 139 (SIGSEGV); stderr $(head -c 300 "$out/stderr")"
fi
records=("$root"/records/*.ccrec)
if [ ! -f "${records[0]}" ] || [ ${#records[@]} -ne 1 ]; then
  fail "expected one complete record, found: $(ls -A "$root/records" | tr '\n' ' ')"
else
  swift build --product crash-inspect >"$out/inspect-build.log" 2>&1 || { tail -20 "$out/inspect-build.log" >&2; exit 1; }
  inspect="$(swift build --show-bin-path)/crash-inspect"
  if ! "$inspect" show "${records[0]}" --symbols .build-static/release --json >"$out/show.json" 2>"$out/show.err"; then
    fail "crash-inspect show: $(head -c 300 "$out/show.err")"
  elif ! verdict=$(python3 - "$out/show.json" <<'PY'
import json, sys
record = json.load(open(sys.argv[1]))
problems = []
if record.get("complete") is not True: problems.append("record not complete")
if record.get("signal") != 11: problems.append(f"signal {record.get('signal')}")
crashed = [t for t in record.get("threads") or [] if t.get("crashed")]
names = [f.get("symbol") or "?" for f in (crashed[0].get("frames", []) if crashed else [])]
if not any("capture_only" in n or "capture-only" in n or "main" == n for n in names):
    problems.append(f"the crashed thread's frames name nothing of capture-only: {names[:8]}")
if problems:
    print("; ".join(problems)); sys.exit(1)
print(" → ".join(names[:4]))
PY
  ); then
    fail "record: $verdict"
  else
    echo "ok     record complete, read outside the root filesystem: $verdict"
  fi
fi

if [ "$failures" -ne 0 ]; then echo "slim-image-check: $failures failed"; exit 1; fi
echo "slim-image-check: all passed"
