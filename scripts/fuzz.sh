#!/usr/bin/env bash
# Fuzzes the crash-record parser (and the inspector's use of a record) with libFuzzer for a
# bounded time: scripts/fuzz.sh [seconds]. Starts from the committed corpus in Fuzz/corpus;
# new inputs go to a scratch copy (copy interesting ones back by hand).
# The fuzzer is the main package's record-fuzzer target, built here with libFuzzer in a scratch
# directory of its own (.build-fuzz), so the sanitizer flags never touch .build.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
swift build -c release --scratch-path .build-fuzz --product record-fuzzer \
  -Xswiftc -sanitize=fuzzer -Xswiftc -use-ld=lld -Xswiftc -DRECORD_FUZZER
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp Fuzz/corpus/* "$work/"
.build-fuzz/release/record-fuzzer "$work" -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/" 2>&1 | tail -15
echo "fuzz: ran ${seconds}s over the record parser with no crash"
