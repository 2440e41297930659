#!/usr/bin/env bash
# What the request contexts cost a server, with them and without them (--no-crash-context), the
# two interleaved round by round in one run, on loopback:
#   the Hummingbird example (Examples/CrashingServer's crashing-server, release) serving GET /ok to
#     wrk, with CrashContextMiddleware;
#   --grpc: the gRPC example (crashing-grpc-server, release: grpc-swift 2 over
#     grpc-swift-nio-transport's HTTP/2) answering a unary RPC at once to its own client's 16
#     callers, with CrashContextInterceptor;
#   --hang: the Hummingbird example with hang detection on (CRASHCAPTURE_HANG_SECONDS=5) and off,
#     the request contexts on in both;
#   --guarded-heap: the Hummingbird example (which links CrashCaptureGuardedHeap) with the guarded
#     heap off, on at one allocation in 5000 and on at one in 100, three variants interleaved; each
#     round also prints the server's resident memory after its load (VmRSS);
#   --memory: hang detection on in both, the memory watch on (CRASHCAPTURE_MEMORY_PERCENT=90) and
#     off (0), the server in a cgroup v1 memory cgroup of its own limited to 1 GiB (root; without
#     one the watch has no limit to read, and the script says so); each round first leaves the
#     server idle for 10 s and prints the whole process's CPU time then (ms).
# A benchmark, not a test: it prints medians, their difference and the cost per request, and fails
# only when it cannot measure.
#   scripts/server-rps.sh [--grpc | --hang | --memory | --guarded-heap] [rounds [seconds-per-round]]
set -euo pipefail
cd "$(dirname "$0")/.."
grpc=0 hang=0 memory=0 heap=0
if [ "${1:-}" = --grpc ]; then grpc=1; shift; fi
if [ "${1:-}" = --hang ]; then hang=1; shift; fi
if [ "${1:-}" = --memory ]; then memory=1; shift; fi
if [ "${1:-}" = --guarded-heap ]; then heap=1; shift; fi
rounds="${1:-5}"
seconds="${2:-5}"
if [ "$grpc" = 1 ]; then product=crashing-grpc-server; what="CrashContextInterceptor"; unit="RPCs/s"
else product=crashing-server; what="CrashContextMiddleware"; unit="req/s"
  [ "$hang" = 1 ] && what="hang detection"
  [ "$memory" = 1 ] && what="the memory watch"
  [ "$heap" = 1 ] && what="the guarded heap"
  command -v wrk >/dev/null || {
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq wrk >/dev/null
  }
fi
swift build -c release --package-path Examples/CrashingServer --product "$product" >/dev/null
server="$(swift build -c release --package-path Examples/CrashingServer --show-bin-path)/$product"
scratch="$(mktemp -d)"
cgroup=""
trap 'rm -rf "$scratch"; [ -n "$cgroup" ] && rmdir "$cgroup" 2>/dev/null || true' EXIT
launch=()
if [ "$memory" = 1 ]; then
  own="$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)"
  if [ -n "$own" ] && mkdir "/sys/fs/cgroup/memory${own%/}/crashcapture-bench-$$" 2>/dev/null; then
    cgroup="/sys/fs/cgroup/memory${own%/}/crashcapture-bench-$$"
    echo $((1 << 30)) > "$cgroup/memory.limit_in_bytes"
    launch=(/bin/sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cgroup")
  else
    echo "server-rps: no cgroup v1 memory cgroup could be made: the memory watch finds no limit and reads nothing" >&2
  fi
fi
idle=()

# One round of one variant: start the server, wait for its port, load it, stop it. Prints the rate.
round() {
  local out="$scratch/out" pid port
  : > "$out"
  SWIFT_BACKTRACE=enable=no "${launch[@]}" "$server" --dir "$scratch/records" "$@" > "$out" 2>/dev/null &
  pid=$!
  for _ in $(seq 200); do grep -q "listening on" "$out" && break; sleep 0.05; done
  if [ "$memory" = 1 ]; then
    # Idle: the whole process's CPU time (utime + stime, in clock ticks) over 10 s, in ms.
    local before after
    before="$(awk '{print $14 + $15}' "/proc/$pid/stat")"; sleep 10; after="$(awk '{print $14 + $15}' "/proc/$pid/stat")"
    echo "idle $(( (after - before) * 1000 / $(getconf CLK_TCK) ))" >> "$scratch/idle-$CRASHCAPTURE_MEMORY_PERCENT"
  fi
  port="$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$out")"
  [ -n "$port" ] || { echo "server-rps: the server did not start" >&2; kill "$pid"; exit 1; }
  if [ "$grpc" = 1 ]; then "$server" client --port "$port" --load "$seconds" --concurrency 16
  else wrk -t1 -c16 -d"${seconds}s" "http://127.0.0.1:$port/ok" | sed -n 's/^Requests\/sec: *//p'; fi
  if [ "$heap" = 1 ]; then
    echo "$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")" >> "$scratch/rss-${CRASHCAPTURE_GUARDED_HEAP:-off}"
  fi
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
}

if [ "$heap" = 1 ]; then
  : > "$scratch/rates"
  for r in $(seq "$rounds"); do
    for variant in off 5000 100; do
      if [ "$variant" = off ]; then rate="$(round)"; else rate="$(CRASHCAPTURE_GUARDED_HEAP=$variant round)"; fi
      echo "$variant $rate" >> "$scratch/rates"
    done
  done
  python3 - "$scratch" <<'PY'
import statistics, sys
scratch = sys.argv[1]
rates = {}
for line in open(scratch + "/rates"):
    variant, rate = line.split()
    rates.setdefault(variant, []).append(float(rate))
base = statistics.median(rates["off"])
for variant, label in [("off", "off (linked)"), ("5000", "on, 1 in 5000"), ("100", "on, 1 in 100")]:
    median = statistics.median(rates[variant])
    rss = [int(x) for x in open(f"{scratch}/rss-{variant}").read().split()]
    print(f"guarded heap {label:<14} median {median:8.0f} req/s ({100 * (median - base) / base:+.1f} %)  "
          f"VmRSS median {statistics.median(rss) / 1024:.1f} MiB  ({', '.join(f'{x:.0f}' for x in rates[variant])})")
PY
  exit 0
fi
with=(); without=()
for r in $(seq "$rounds"); do
  if [ "$memory" = 1 ]; then
    with+=("$(CRASHCAPTURE_HANG_SECONDS=5 CRASHCAPTURE_MEMORY_PERCENT=90 round)")
    without+=("$(CRASHCAPTURE_HANG_SECONDS=5 CRASHCAPTURE_MEMORY_PERCENT=0 round)")
  elif [ "$hang" = 1 ]; then
    with+=("$(CRASHCAPTURE_HANG_SECONDS=5 round)")
    without+=("$(CRASHCAPTURE_HANG_SECONDS=0 round)")
  else
    with+=("$(round)")
    without+=("$(round --no-crash-context)")
  fi
done
python3 - "${with[*]}" "${without[*]}" "$what" "$unit" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
what, unit = sys.argv[3], sys.argv[4]
ma, mb = statistics.median(a), statistics.median(b)
print(f"with {what:<26} median {ma:10.0f} {unit}  ({', '.join(f'{x:.0f}' for x in a)})")
print(f"without it                     median {mb:10.0f} {unit}  ({', '.join(f'{x:.0f}' for x in b)})")
print(f"difference                     {100 * (ma - mb) / mb:+.1f} %, {1e6 / ma - 1e6 / mb:+.2f} µs of the server's time per request")
PY
if [ "$memory" = 1 ]; then
  for variant in 90 0; do
    echo "idle 10 s, whole-process CPU, CRASHCAPTURE_MEMORY_PERCENT=$variant: $(sed -n 's/^idle //p' "$scratch/idle-$variant" | tr '\n' ' ')ms"
  done
fi
