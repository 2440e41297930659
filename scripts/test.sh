#!/usr/bin/env bash
# The test command: installs what is missing, checks the C code (no warning; the C core under
# ASan + UBSan), compares each crash's death with the same crash without capture (strace, cores;
# and every harness scenario with Swift's backtracer on: reports, what is left running),
# runs the C core's crashes on aarch64 under qemu-user, plain and with pointer
# authentication, runs a static-stdlib program in a minimal Debian root filesystem, builds a
# release harness, the example servers (Hummingbird 2, Vapor 4) and the launch benchmark too, compiles the README's and
# the DocC articles' code blocks (the server pages' whole programs too), runs every test, counts the public surface (and its doc comments),
# builds the DocC catalogs without a warning, fuzzes the record parser.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The example servers are a package of their own that depends on this one with its traits on, as an
# adopter does: the main package's own build and tests never build Hummingbird or Vapor. Their
# release build (the longest step) runs beside the checks below, which mostly wait on processes.
echo "== building the example servers in the background (Examples/CrashingServer: crashing-server on Hummingbird 2, crashing-vapor-server on Vapor 4, crashing-grpc-server on grpc-swift 2)"
servers_started=$SECONDS
servers_log="$(mktemp)"
( swift build -c release --package-path Examples/CrashingServer >"$servers_log" 2>&1; echo $? >"$servers_log.rc" ) &
servers_job=$!
scripts/c-checks.sh
echo "== arm64: the C core cross-compiled and its crashes run under qemu-aarch64-static (plain and PAC)"
scripts/arm64-check.sh
echo "== deploying: a static-stdlib capture program in a minimal Debian root filesystem (the recipe in CrashReporter.docc, "Deploying")"
scripts/slim-image-check.sh
echo "== building the release crash-harness (the tests run every scenario in both builds)"
swift build -c release --product crash-harness
export CRASH_HARNESS_RELEASE="$(swift build -c release --show-bin-path)/crash-harness"
echo "== how a captured process dies: each crash's final signal, status and core registers against no capture; every scenario with Swift's backtracer on"
scripts/death-check.sh --harness "$CRASH_HARNESS_RELEASE"
# swift test's BacktracerAlongsideTests need not compare the whole table a second time.
export BACKTRACER_TABLE_CHECKED="death-check over $CRASH_HARNESS_RELEASE"
# What needs no example server is built while the servers' build ends: its last modules (Vapor's,
# the three executables) compile one at a time and leave a core free.
echo "== the launch benchmark builds (Benchmarks/LaunchBench, release: what Benchmarks/README.md's launch table is measured with; scripts/bench.sh runs it)"
swift build -c release --package-path Benchmarks/LaunchBench
echo "== the tests build (debug), for swift test below"
swift build --build-tests
wait "$servers_job" || true
if [ "$(cat "$servers_log.rc" 2>/dev/null)" != 0 ]; then cat "$servers_log"; echo "the example servers did not build" >&2; exit 1; fi
tail -n 3 "$servers_log"
servers_bin="$(swift build -c release --package-path Examples/CrashingServer --show-bin-path)"
export CRASHING_SERVER="$servers_bin/crashing-server"
export CRASHING_VAPOR_SERVER="$servers_bin/crashing-vapor-server"
export CRASHING_GRPC_SERVER="$servers_bin/crashing-grpc-server"
echo "== example servers built (in the background) by $((SECONDS - servers_started)) s after they began"
echo "== the README's and the DocC articles' Swift blocks compile (scripts/snippets.py: DocSnippets, and each server page's whole program, in Examples/CrashingServer)"
python3 scripts/snippets.py Examples/CrashingServer/Sources/DocSnippets
swift build -c release --package-path Examples/CrashingServer --target DocSnippets
# Each server page's main.swift, built and linked as its own executable (GettingStartedHummingbird,
# GettingStartedVapor): the dependencies are the release build's above. The package declares these
# targets only where snippets.py wrote their main.swift, which SwiftPM's manifest cache (keyed by the
# manifest's text) cannot see: hence no cache here.
for page_main in Examples/CrashingServer/Sources/GettingStarted*/main.swift; do
  [ -e "$page_main" ] || continue
  page_server="$(basename "$(dirname "$page_main")")"
  swift build -c release --package-path Examples/CrashingServer --manifest-cache none --product "$page_server"
done
echo "== swift test"
swift test
# The fuzzer (a scratch path of its own) builds and runs beside the public surface and the DocC
# catalogs.
echo "== fuzzing the record parser for ${FUZZ_SECONDS:-60} s, in the background"
fuzz_log="$(mktemp)"
( scripts/fuzz.sh "${FUZZ_SECONDS:-60}" >"$fuzz_log" 2>&1; echo $? >"$fuzz_log.rc" ) &
fuzz_job=$!
echo "== the public surface (scripts/public-surface.sh: its budget of public declarations in the shipped modules)"
scripts/public-surface.sh
echo "== the DocC catalogs build with no warning (swift-docc-plugin)"
docs_started=$SECONDS
# One invocation for the seven catalogs: one build of their symbol graphs (a warning in any fails it).
log="$(mktemp)"
swift package generate-documentation --target CrashCapture --target CrashReporter --target RecordDelivery \
  --target CrashReporterSentry --target CrashReporterOTLP --target SensorsAnalytics --target CrashRecordFormat --warnings-as-errors >"$log" 2>&1 || { cat "$log"; exit 1; }
rm -f "$log"
echo "== documentation built in $((SECONDS - docs_started)) s"
echo "== the record parser's fuzzing (started above)"
wait "$fuzz_job" || true
tail -n 15 "$fuzz_log"
if [ "$(cat "$fuzz_log.rc" 2>/dev/null)" != 0 ]; then cat "$fuzz_log"; echo "the fuzzer found a crash or did not run" >&2; exit 1; fi
