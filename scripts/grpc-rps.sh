#!/usr/bin/env bash
# What the gRPC interceptor costs a server: RPCs per second of the gRPC example
# (Examples/CrashingServer's crashing-grpc-server, release) with CrashContextInterceptor and
# without it (--no-crash-context), loaded by its own client (16 callers of a unary RPC that answers
# at once) on loopback, the two interleaved round by round in one run. A benchmark, not a test: it
# prints medians, their difference and the cost per RPC, and fails only when it cannot measure.
#   scripts/grpc-rps.sh [rounds [seconds-per-round]]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-5}"
seconds="${2:-5}"
swift build -c release --package-path Examples/CrashingServer --product crashing-grpc-server >/dev/null
server="$(swift build -c release --package-path Examples/CrashingServer --show-bin-path)/crashing-grpc-server"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# One round of one variant: start the server, wait for its port, load it, stop it. Prints RPCs/s.
round() {
  local out="$scratch/out" pid port
  : > "$out"
  SWIFT_BACKTRACE=enable=no "$server" --dir "$scratch/records" "$@" > "$out" 2>/dev/null &
  pid=$!
  for _ in $(seq 200); do grep -q "listening on" "$out" && break; sleep 0.05; done
  port="$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$out")"
  [ -n "$port" ] || { echo "grpc-rps: the server did not start" >&2; kill "$pid"; exit 1; }
  "$server" client --port "$port" --load "$seconds" --concurrency 16
  kill -KILL "$pid"; wait "$pid" 2>/dev/null || true
}

with=(); without=()
for r in $(seq "$rounds"); do
  with+=("$(round)")
  without+=("$(round --no-crash-context)")
done
python3 - "${with[*]}" "${without[*]}" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
ma, mb = statistics.median(a), statistics.median(b)
print(f"with CrashContextInterceptor:    median {ma:,.0f} RPCs/s  (rounds: {', '.join(f'{x:,.0f}' for x in a)})")
print(f"without it (--no-crash-context): median {mb:,.0f} RPCs/s  (rounds: {', '.join(f'{x:,.0f}' for x in b)})")
print(f"difference: {100 * (ma - mb) / mb:+.1f} %; per RPC: {1e6 / ma - 1e6 / mb:+.2f} µs of the server's time at this load")
PY
