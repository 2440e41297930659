#!/usr/bin/env bash
# What the request contexts cost a server: requests per second of the Hummingbird example
# (Examples/CrashingServer, release) with CrashContextMiddleware and without it (--no-crash-context),
# loaded by wrk on loopback, the two interleaved round by round in one run. A benchmark, not a test:
# it prints medians and their difference and fails only when it cannot measure.
#   scripts/server-rps.sh [rounds [seconds-per-round]]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-5}"
seconds="${2:-5}"
command -v wrk >/dev/null || {
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq wrk >/dev/null
}
swift build -c release --package-path Examples/CrashingServer --product crashing-server >/dev/null
server="$(swift build -c release --package-path Examples/CrashingServer --show-bin-path)/crashing-server"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# One round of one variant: start the server, wait for its port, load /ok, stop it. Prints req/s.
round() {
  local out="$scratch/out" pid port
  : > "$out"
  SWIFT_BACKTRACE=enable=no "$server" --dir "$scratch/records" "$@" > "$out" 2>/dev/null &
  pid=$!
  for _ in $(seq 200); do grep -q "listening on" "$out" && break; sleep 0.05; done
  port="$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$out")"
  [ -n "$port" ] || { echo "server-rps: the server did not start" >&2; kill "$pid"; exit 1; }
  wrk -t1 -c16 -d"${seconds}s" "http://127.0.0.1:$port/ok" | sed -n 's/^Requests\/sec: *//p'
  kill -TERM "$pid"; wait "$pid" || true
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
print(f"with CrashContextMiddleware    median {ma:10.0f} req/s  ({', '.join(f'{x:.0f}' for x in a)})")
print(f"without it                     median {mb:10.0f} req/s  ({', '.join(f'{x:.0f}' for x in b)})")
print(f"difference                     {100 * (ma - mb) / mb:+.1f} %")
PY
