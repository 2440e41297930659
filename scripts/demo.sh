#!/usr/bin/env bash
# The demo: a program crashes under CrashCapture, crash-inspect reads what it left, the next
# launch turns the records into AppCrashed + $AppEnd events and uploads them to a loopback server;
# then Sentry alone: a crash delivered to a loopback Sentry by the next launch; then runs: how each
# run ended (exit, SIGKILL, crash), told by the launch after it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== building crash-harness, crash-inspect and sensors-store"
swift build --product crash-harness
swift build --product crash-inspect
swift build --product sensors-store
bin="$(swift build --show-bin-path)"
demo="${DEMO_DIR:-/tmp/crashcapture-demo}"
rm -rf "$demo" && mkdir -p "$demo"
store="$demo/app.sqlite"
records="$store.records"   # where CrashReporting puts crash records, next to its store
export SWIFT_BACKTRACE=enable=no   # Swift's own backtracer off, to keep the output short

python3 scripts/demo_server.py "$demo/port" 300 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
while [ ! -s "$demo/port" ]; do sleep 0.1; done
endpoint="http://127.0.0.1:$(cat "$demo/port")/sa"

died() { echo "   exit status $1 = 128 + $(($1 - 128)): died of its signal, exactly as it would have without CrashCapture"; }

echo
echo "== launch 1: an app tracks events, then crashes after event 2"
set +e; "$bin/crash-harness" emit --count 5 --store "$store" --crash-after 2 2>/dev/null; status=$?; set -e
died $status
echo "== four more programs crash into the same directory (one at the end of a chain of async functions)"
for scenario in fatal-error null-dereference concurrent-crashes async-let; do
  set +e; "$bin/crash-harness" run "$scenario" --dir "$records" 2>/dev/null; status=$?; set -e
  echo "   $scenario:"; died $status
done

echo
echo "== crash-inspect list: one line per record"
"$bin/crash-inspect" list --dir "$records"
echo
echo "== crash-inspect groups: the same crash across runs and ASLR"
"$bin/crash-inspect" groups --dir "$records"
first="$(ls "$records" | grep '\.ccrec$' | head -1)"
echo
echo "== crash-inspect show ${first%.ccrec} (first 40 lines)"
"$bin/crash-inspect" show "${first%.ccrec}" --dir "$records" > "$demo/show.txt"
head -40 "$demo/show.txt"
async="$(ls "$records" | grep '\.ccrec$' | tail -1)"
echo
echo "== crash-inspect show ${async%.ccrec}: the async callers, and the parent task (its crashed thread)"
"$bin/crash-inspect" show "${async%.ccrec}" --dir "$records" > "$demo/show-async.txt"
sed -n '/^Crashed thread/,/^$/p' "$demo/show-async.txt" | cut -c1-150

echo
echo "== launch 2: the next launch ingests the records and uploads everything to $endpoint"
"$bin/crash-harness" emit --count 2 --store "$store" --endpoint "$endpoint"
sleep 0.5
echo
echo "== sensors-store: nothing left pending, the records are gone"
"$bin/sensors-store" "$store"
ls "$records"

echo
echo "== Sentry alone: a program crashes; the next launch (CrashReporting with a DSN and no events"
echo "   store) sends the record to a loopback Sentry and deletes it — no store file is made"
sentry_records="$demo/sentry-only/records"
set +e; "$bin/crash-harness" run null-dereference --dir "$sentry_records" 2>/dev/null; status=$?; set -e
died $status
"$bin/crash-harness" deliver --records "$sentry_records" --sentry-dsn "http://demo@127.0.0.1:$(cat "$demo/port")/1" > "$demo/deliver.json"
echo "   left in $demo/sentry-only: $(ls -A "$demo/sentry-only" | tr '\n' ' ')(records: $(ls -A "$sentry_records" | grep -c '\.ccrec' || true))"

echo
echo "== Runs: each launch tells how the runs before it ended (a marker per run beside the records)"
runs="$demo/runs/records"
told() { python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).read().splitlines()[-1]); print("   told by", sys.argv[2] + ":", ", ".join(x["runID"] + " " + x["end"] for x in r["runsEnded"]) or "nothing", "| still running:", r["runsRunning"])' "$1" "$2"; }
"$bin/crash-harness" deliver --records "$runs" --run-id exits-normally --end exit > "$demo/run1.json"
"$bin/crash-harness" deliver --records "$runs" --run-id gets-sigkill --end hold --ready-file "$demo/run2.ready" > "$demo/run2.json" &
held=$!
for _ in $(seq 600); do [ -e "$demo/run2.ready" ] && break; sleep 0.05; done
kill -9 "$held"; wait "$held" 2>/dev/null || true
set +e; "$bin/crash-harness" deliver --records "$runs" --run-id crashes --crash > "$demo/run3.json" 2>/dev/null; status=$?; set -e
died $status
"$bin/crash-harness" deliver --records "$runs" --run-id next > "$demo/run4.json"
told "$demo/run2.json" gets-sigkill
told "$demo/run3.json" crashes
told "$demo/run4.json" next

echo
echo "== crash-harness verify: scenarios run as child processes, each record checked"
"$bin/crash-harness" verify --scenario null-dereference --scenario stack-overflow-thread \
  --scenario handler-before --scenario crash-in-handler
