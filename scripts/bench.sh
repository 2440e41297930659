#!/usr/bin/env bash
# The benchmark suite (release builds; nothing here is a test): what linking and starting
# CrashCapture and CrashReporting cost a program's launch (the launch table), crash-to-exit side
# by side (plain, with 100 blocking threads, in a 50-deep async chain; the handler's time),
# symbolication, in-process costs through ordo-one/benchmark (request contexts included), the
# tracking store's figures, a server's requests per second with and without request contexts.
# crash-to-exit, crash-target and symbolication-bench are targets of the main package
# (Benchmarks/InPackage: they use its internal modules); the rest are packages of their own.
#   scripts/bench.sh [runs [launch-rounds]]
#     runs          = interleaved crash-to-exit runs per configuration (default 100)
#     launch-rounds = interleaved rounds of the launch table (default: runs; the targets are judged on ≥ 40)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
runs="${1:-100}"
launch_rounds="${2:-$runs}"
echo "== $(date -u +%Y-%m-%d) on $(uname -m), $(nproc) cores, $(swift --version 2>/dev/null | head -1)"

echo; echo "== launch cost: plain, capture (also with CRASHCAPTURE_DISABLE=1), foundation, reporter (Sentry only), analytics (also started Sentry-only: before the split) (Benchmarks/LaunchBench)"
swift build -c release --package-path Benchmarks/LaunchBench
"$(swift build -c release --package-path Benchmarks/LaunchBench --show-bin-path)/launch-cost" "$launch_rounds"

echo; echo "== crash-to-exit: a plain crash, threads that block every signal, a crash in a 50-deep async chain (Benchmarks/InPackage)"
swift build -c release --product crash-target
swift build -c release --product crash-to-exit
swift build -c release --product symbolication-bench
bin="$(swift build -c release --show-bin-path)"
"$bin/crash-to-exit" "$runs"

echo; echo "== crash-timeline: a one-thread crash segment by segment, with CrashCapture and without it (Benchmarks/crash-timeline.py)"
python3 Benchmarks/crash-timeline.py "$bin/crash-target" "$runs"

echo; echo "== symbolication of a 64-frame record, warm and cold (symbolication-bench, Benchmarks/InPackage)"
record_dir="$(mktemp -d)"
SWIFT_BACKTRACE=enable=no "$bin/crash-target" deep "$record_dir" || true
"$bin/symbolication-bench" "$record_dir"/*.ccrec
rm -rf "$record_dir"

echo; echo "== install, breadcrumbs, request contexts (ordo-one/benchmark)"
(cd Benchmarks/CaptureBench && swift package --disable-sandbox benchmark --no-progress --format markdown)

echo; echo "== tracking store and upload (tracking-bench, Benchmarks/InPackage)"
swift run -c release tracking-bench

echo; echo "== a server's requests per second with and without request contexts (scripts/server-rps.sh: the Hummingbird example, wrk on loopback)"
scripts/server-rps.sh
echo; echo "== a gRPC server's RPCs per second with and without the interceptor (scripts/server-rps.sh --grpc: the gRPC example and its client on loopback)"
scripts/server-rps.sh --grpc
echo; echo "== hang detection: a server's requests per second with it on and off (scripts/server-rps.sh --hang)"
scripts/server-rps.sh --hang
echo; echo "== hang detection: how long a snapshot stops a process of 50 threads with 50 requests in flight, and the watcher's CPU when idle (crash-harness hang, release)"
swift build -c release --product crash-harness >/dev/null
harness="$(swift build -c release --show-bin-path)/crash-harness"
scratch_hang="$(mktemp -d)"
"$harness" hang --dir "$scratch_hang/cost" --mode snapshot-cost --threshold 0 --waiting 50 --threads 50 --rounds 20
for threshold in 5 0; do
  cpu=$("$harness" hang --dir "$scratch_hang/idle-$threshold" --mode serve --threshold "$threshold" --seconds 30 --waiting 0 \
    | tail -1 | python3 -c 'import json, sys; print(json.load(sys.stdin)["cpu_ms"])')
  echo "idle for 30 s with hang detection $([ "$threshold" = 0 ] && echo "off     " || echo "on (5 s)"): $cpu ms of CPU"
done
rm -rf "$scratch_hang"
