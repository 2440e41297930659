#!/usr/bin/env bash
# The demo: programs crash under CrashCapture, then crash-inspect reads what they left.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== building crash-harness and crash-inspect"
swift build --product crash-harness
swift build --product crash-inspect
bin="$(swift build --show-bin-path)"
demo="${DEMO_DIR:-/tmp/crashcapture-demo}"
rm -rf "$demo" && mkdir -p "$demo/crashes"

echo
echo "== four programs crash under CrashCapture (Swift's own backtracer off, to keep this short)"
for scenario in null-dereference fatal-error null-dereference concurrent-crashes; do
  set +e
  SWIFT_BACKTRACE=enable=no "$bin/crash-harness" run "$scenario" --dir "$demo/crashes" 2>/dev/null
  status=$?
  set -e
  echo "   $scenario: exit status $status = 128 + $((status - 128)) (died of its signal, as it would have without us)"
done

echo
echo "== crash-inspect list: one line per record"
"$bin/crash-inspect" list --dir "$demo/crashes"

echo
echo "== crash-inspect groups: the same crash across runs and ASLR"
"$bin/crash-inspect" groups --dir "$demo/crashes"

first="$(ls "$demo/crashes" | head -1)"
echo
echo "== crash-inspect show ${first%.ccrec} (first 45 lines)"
"$bin/crash-inspect" show "${first%.ccrec}" --dir "$demo/crashes" | head -45

echo
echo "== crash-harness verify: a few scenarios run as children, each record checked"
"$bin/crash-harness" verify --scenario null-dereference --scenario stack-overflow-thread \
  --scenario handler-before --scenario swift-backtracer --scenario crash-in-handler
