#!/usr/bin/env bash
# The public surface: public and open declarations of every module this package ships (test
# support and the crash harness's scenarios aside), counted from the compiler's own symbol graphs
# (synthesized members left out, enum cases counted). Fails above the budget (CONTRIBUTING.md, "The public surface").
# Usage: scripts/public-surface.sh [--list MODULE]
set -euo pipefail
cd "$(dirname "$0")/.."
# 320 → 331: the app's scope that a crash record carries (CrashScope and its three fields and
# initializer, CrashUser and its four fields and initializer, CrashRecord.scope,
# CrashHandler.scope and updateScope) and 335: CrashReportingService (the reporter as a
# ServiceLifecycle service: the type, its reporting, initializer and run).
# 335 → 342: the OpenTelemetry sink's seven configuration fields (CrashReporting.Configuration
# otlpLogsEndpoint, otlpHeaders, otlpGzip, otlpServiceName, otlpResourceAttributes, otlpUpload, otlpData).
# 342 → 343: CrashReporting.Configuration.sentryMinidump (the minidump beside each Sentry event).
# 343 → 347: CrashReportingLifecycle (Vapor's lifecycle ending the reporter's run: the type, its
# initializer, shutdownAsync and shutdown).
# 347 → 350: CrashContextInterceptor (grpc-swift 2: the type, its initializer and intercept).
# 350 → 355: CrashReporting.verifySetup and its SetupCheck (sinks, passed, description).
# 355 → 390: hang detection — HangDetection (8), HangDetector (5), HangHeartbeat (4), WatchedLoop (4),
# CrashHandler.snapshot and SnapshotRecord (5), RecordKind and CrashRecord.kind (5), the two
# configurations' hangDetection (2), and the ServiceLifecycle services' doc-only changes (0).
# 390 → 385: what only tests and the project's own tools need became package — UploadPolicy's
# batchSize, flushThreshold, flushInterval (the record sinks send one record per request; the
# analytics' batching keeps its defaults), Tracker.Configuration.runID (the reporter's) and
# InboxRecord.path (the sinks' lease); 385 → 384: Tracker.Configuration.shutdownAtExit, with the
# tracker's own exit hook (the reporter's one exit hook ends every sink).
# 384 → 386: CrashRecordSink.runTick and its default (a sink that sends on a timer — Sentry's
# batched sessions — is ticked through the sink protocol, not by name).
# 386 → 388: HangDetection.memoryThreshold and RecordKind.memory (the memory watch and its records).
# 388 → 389: CrashDataPolicy.functionNames (frames named from the binaries' symbol tables at send
# time, and the switch that turns it off).
# 389 → 387: each sink its own options — CrashReporting.Configuration's 16 sentry…/otlp… fields and
# its sentryDSN initializer (−17) became SentryOptions (10, beside the Sentry sink) and OTLPOptions
# (8, beside the OTLP sink), held as Configuration.sentry and .otlp, with one dataPolicy for both
# (+21); the two environment variables' names (CrashHandler.disableEnvironmentVariable,
# HangDetection.environmentVariable) and what the app passed in and never reads back
# (WatchedLoop.name and submit, HangHeartbeat.name, BreadcrumbLogHandler.label) became internal.
BUDGET=387
# Each Swift library target's symbol graph, extracted from its built module (a quarter of a second
# each; `swift package dump-symbol-graph` builds the whole package again first, minutes). The
# modules come from the example servers' release build, which builds this package as an adopter
# does, with every server integration's trait on (in this package's own build those modules are
# empty); a module it does not use, from this package's debug build.
swift build --build-tests >/dev/null
swift build -c release --package-path Examples/CrashingServer >/dev/null   # up to date in scripts/test.sh: seconds
graphs="$(mktemp -d)"
triple="$(uname -m)-unknown-linux-gnu"
swift package describe --type json | python3 -c '
import json, sys
for target in json.load(sys.stdin)["targets"]:
    if target["type"] == "library" and target.get("module_type") == "SwiftTarget": print(target["name"])
' | while read -r module; do
  root=.
  [ -f "Examples/CrashingServer/.build/release/Modules/$module.swiftmodule" ] && root=Examples/CrashingServer
  bin="$(cd "$root/.build/$([ "$root" = . ] && echo debug || echo release)" && pwd -P)"
  flags=()
  # The C modules' maps: the ones SwiftPM writes, and the packages' own (include/module.modulemap).
  while IFS= read -r map; do flags+=(-Xcc "-fmodule-map-file=$map"); done < <(
    find "$bin" -maxdepth 3 -name module.modulemap -not -path "*-tool.build/*"; find "$root/.build/checkouts" -path '*/Sources/*/module.modulemap' 2>/dev/null)
  for include in CShims/include Sources/*/include; do flags+=(-Xcc -I -Xcc "$include"); done
  swift-symbolgraph-extract -module-name "$module" -target "$triple" -I "$bin/Modules" -I "$bin" \
    -minimum-access-level public -skip-synthesized-members -output-dir "$graphs" "${flags[@]}" >/dev/null 2>&1 \
    || { echo "public-surface: no symbol graph of $module (from $bin)" >&2; exit 1; }
done
python3 - "$BUDGET" "${1:-}" "${2:-}" "$graphs" <<'PY'
import glob, json, os, sys
budget, flag, which, graphs = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
aside = {"TestSupport", "CrashScenarios"}
counts, names, undocumented = {}, {}, []
for path in sorted(glob.glob(graphs + "/*.symbols.json")):
    module = os.path.basename(path).split(".")[0].split("@")[0]
    if module in aside or module.endswith("Tests") or module.startswith("C") and module[1].isupper() and module not in ("CrashCapture",):
        continue
    graph = json.load(open(path))
    public = [s for s in graph["symbols"] if s.get("accessLevel") in ("public", "open")]
    counts[module] = counts.get(module, 0) + len(public)
    names.setdefault(module, []).extend(".".join(s["pathComponents"]) + "  (" + s["kind"]["identifier"].replace("swift.", "") + ")" for s in public)
    undocumented.extend(module + ": " + ".".join(s["pathComponents"]) for s in public if not s.get("docComment"))
if flag == "--list":
    print("\n".join(sorted(names.get(which, []))))
    sys.exit(0)
total = sum(counts.values())
for module, count in sorted(counts.items(), key=lambda item: -item[1]):
    print(f"{count:5d}  {module}")
print(f"{total:5d}  total (budget {budget})")
# Every public declaration says what it is: the DocC catalogs show it.
for name in undocumented:
    print(f"no doc comment: {name}")
sys.exit(0 if total <= budget and not undocumented else 1)
PY
