#!/usr/bin/env bash
# The demo: a short tour of crashes recorded by CrashCapture and verified by crash-harness.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== building"
swift build --product crash-harness
bin="$(swift build --show-bin-path)"
demo="${DEMO_DIR:-/tmp/crashcapture-demo}"
rm -rf "$demo" && mkdir -p "$demo"

echo
echo "== three programs crash under CrashCapture (Swift's own backtracer off, to keep this short)"
for scenario in null-dereference fatal-error concurrent-crashes; do
  set +e
  SWIFT_BACKTRACE=enable=no "$bin/crash-harness" run "$scenario" --dir "$demo" 2>/dev/null
  status=$?
  set -e
  echo "   $scenario: exit status $status (128 + signal: the process died of its signal, as without us)"
done

echo
echo "== the records they left in $demo"
ls -l "$demo"

echo
echo "== crash-harness verify: each scenario run as a child and its record checked"
"$bin/crash-harness" verify --scenario null-dereference --scenario fatal-error --scenario stack-overflow-thread \
  --scenario concurrent-crashes --scenario handler-before --scenario swift-backtracer
