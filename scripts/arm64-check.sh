#!/usr/bin/env bash
# arm64 under emulation (scripts/test.sh runs it; about 17 s):
#  1. every C file of the core (CShims, Sources/CCrashRecordLayout) compiles for aarch64 with
#     aarch64-linux-gnu-gcc -Wall -Wextra -Werror, as debug (-O0) and release (-O2) flags;
#  2. the core and Tests/Arm64Crashes/arm64_crashes.c link into two aarch64 programs, one plain
#     and one with pointer authentication (-mbranch-protection=standard), each run under
#     qemu-aarch64-static -cpu max (which executes PAC with real keys), once without capture and
#     once with, per crash: null-dereference, trap (__builtin_trap), abort, call-null (a call
#     through NULL), previous-handler (the program's own SA_RESETHAND handler without
#     SA_ONSTACK, chained), stopped-thread (a second thread in read(), stopped and unwound),
#     blocking-thread (a second thread blocking every signal), thread-overflow (a 256 KiB thread
#     stack overflowing into its guard page) and unwinder-fault (a test hook faults inside the
#     unwinder after the fourth frame);
#  3. the PAC build runs a third time as if libunwind.so.8 were not installed ("pac-frames"):
#     every thread walked by its frame records alone, each record with its note; a leaf crash
#     function's caller is then not expected, as CrashReporter.docc, "Deploying", says;
#  4. each death is judged against the same crash without capture, and the record it left is
#     read back with the x86-64 crash-inspect (show --json): complete (unwinder-fault: cut short,
#     with its note), the expected signal, si_code and fault address, crashed-thread frames
#     naming arm64_crash_* → arm64_level2 → arm64_level1 → main in that order (thread-overflow:
#     the innermost and the outermost frames, the middle left out), what the record says of the
#     other threads, and no frame or lr with bits above the 48-bit address space (a signed
#     return address would have them);
#  5. each record of the plain build is exported with `crash-inspect export --minidump` and read
#     by PyPI's minidump parser and by lldb-16 with the aarch64 program (check_minidump).
#
# qemu-user and SIGSEGV: a program that dies of SIGSEGV without capture ends as a SIGSEGV death
# under qemu too (status 139 here). With capture, the handler re-raises the fault to itself
# after writing the record, and qemu-user (Debian 12's 7.2) aborts on that self-queued SIGSEGV
# that carries a fault si_code: it prints "cpu_exec: assertion failed: (cpu == current_cpu)" and
# the process exits with status 127 instead of dying of the signal. So for a SIGSEGV crash under
# capture this script accepts either the exact death (139) or exit 127 together with that qemu
# assertion line on stderr (reported as "qemu quirk"), and checks the signal in the record
# instead: signal 11, SEGV_MAPERR, fault address 0x0. SIGTRAP and SIGABRT deaths are compared
# exactly (same status with and without capture). Dying by returning to the faulting
# instruction would make these deaths exact under qemu, and was rejected for what it breaks on
# real Linux (docs/decisions/return-to-fault.md).
#
# Needs (Debian 12, as root): dpkg --add-architecture arm64 && apt-get update &&
#   apt-get install -y gcc-aarch64-linux-gnu qemu-user-static libunwind-dev:arm64 libc6-dev:arm64
#   scripts/arm64-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build-arm64
mkdir -p "$out"

cc=aarch64-linux-gnu-gcc
qemu=qemu-aarch64-static
# At run time the aarch64 libraries are Debian's multiarch ones (libc6:arm64, libunwind8:arm64 in
# /lib/aarch64-linux-gnu), not the cross toolchain's copy in /usr/aarch64-linux-gnu: with that
# one every pthread_create hangs under qemu-aarch64-static 7.2 on this host.
runroot=/
missing=()
command -v "$cc" >/dev/null || missing+=("$cc (gcc-aarch64-linux-gnu)")
command -v "$qemu" >/dev/null || missing+=("$qemu (qemu-user-static)")
[ -e /usr/include/aarch64-linux-gnu/libunwind.h ] || missing+=("libunwind-dev:arm64")
[ -e /lib/ld-linux-aarch64.so.1 ] || missing+=("/lib/ld-linux-aarch64.so.1 (libc6:arm64)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "arm64-check: missing: ${missing[*]}" >&2
  echo "arm64-check: see the install line at the top of $0" >&2
  exit 2
fi

includes=(-I CShims -I CShims/include -I Sources/CCrashRecordLayout/include)
core=(CShims/*.c Sources/CCrashRecordLayout/layout.c)

echo "== aarch64: -Wall -Wextra -Werror over the core (${#core[@]} files), debug and release flags"
for file in "${core[@]}"; do
  "$cc" -fsyntax-only -Wall -Wextra -Werror -O0 -DDEBUG=1 "${includes[@]}" "$file"
  "$cc" -fsyntax-only -Wall -Wextra -Werror -O2 "${includes[@]}" "$file"
done
echo "   no warnings"

echo "== aarch64: the crash programs (Tests/Arm64Crashes) linked with the core, plain and with PAC"
# -g and --build-id: crash-inspect symbolicates by build-id; frame pointers and no sibling
# calls keep the call chain the checks name. The second build signs return addresses with
# pointer authentication (-mbranch-protection=standard: pac-ret and BTI, as Debian, Ubuntu and
# Fedora build many arm64 libraries), which qemu's -cpu max executes with real keys.
for variant in plain pac; do
  flags=()
  [ "$variant" = pac ] && flags=(-mbranch-protection=standard)
  "$cc" -g -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra -Werror "${flags[@]}" \
    -Wl,--build-id "${includes[@]}" Tests/Arm64Crashes/arm64_crashes.c "${core[@]}" \
    -lpthread -ldl -o "$out/arm64-crashes-$variant"
  echo "   built $out/arm64-crashes-$variant"
done
# The PAC build must really sign: its functions start with paciasp (hint #25).
aarch64-linux-gnu-objdump -d "$out/arm64-crashes-pac" >"$out/arm64-crashes-pac.dis"
if ! grep -q 'paciasp' "$out/arm64-crashes-pac.dis"; then
  echo "arm64-check: the PAC build has no paciasp: pointer authentication is not exercised" >&2; exit 1
fi

echo "== crash-inspect (x86-64) to read the records back"
swift build --product crash-inspect >"$out/crash-inspect-build.log" 2>&1 || {
  cat "$out/crash-inspect-build.log" >&2; echo "arm64-check: crash-inspect did not build" >&2; exit 1; }
inspect="$(swift build --show-bin-path)/crash-inspect"

# run SCENARIO MODE: runs the program under qemu in a fresh directory; sets status and dir.
run() {
  dir="$out/run-$variant-$1-$2"
  rm -rf "$dir" && mkdir -p "$dir/records"
  set +e
  # In a subshell whose own stderr is discarded: bash's "Segmentation fault" job notice, not
  # the program's stderr (which goes to $dir/stderr). 128 + N: died of signal N.
  local binary=$out/arm64-crashes-${variant%-frames} frames_only=0
  [ "$variant" != "${variant%-frames}" ] && frames_only=1
  ( ARM64_CRASHES_NO_LIBUNWIND=$frames_only timeout 120 "$qemu" -cpu max -L "$runroot" "$binary" "$1" "$dir/records" "$2" \
      >"$dir/stdout" 2>"$dir/stderr"; exit $? ) 2>/dev/null
  status=$?
  set -e
}

failures=0
marker=""   # a line both runs must print on stderr (set per check)
fail() { echo "FAIL   $variant $scenario: $*"; failures=$((failures + 1)); }

# scenario signal expected-frames...
check() {
  scenario=$1 signal=$2
  shift 2
  local expected_status=$((128 + signal))

  run "$scenario" nocapture
  if [ "$status" -ne "$expected_status" ]; then
    fail "without capture: status $status, expected $expected_status (signal $signal)"; return
  fi
  [ -z "$(ls -A "$dir/records")" ] || { fail "without capture: a record was written"; return; }
  if [ -n "$marker" ] && ! grep -qF "$marker" "$dir/stderr"; then
    fail "without capture: no \"$marker\" on stderr"; return
  fi

  run "$scenario" capture
  local death
  if [ "$status" -eq "$expected_status" ]; then
    death="signal $signal, as without capture"
  elif [ "$signal" -eq 11 ] && [ "$status" -eq 127 ] \
       && grep -q 'cpu_exec: assertion failed: (cpu == current_cpu)' "$dir/stderr"; then
    death="exit 127 with qemu's assertion (qemu quirk; SIGSEGV checked in the record)"
  else
    fail "with capture: status $status, expected $expected_status; stderr: $(head -c 400 "$dir/stderr")"; return
  fi

  if [ -n "$marker" ] && ! grep -qF "$marker" "$dir/stderr"; then
    fail "with capture: no \"$marker\" on stderr"; return
  fi

  local records=("$dir"/records/*.ccrec)
  [ -n "$expect_partial" ] && records=("$dir"/records/*.ccrec.partial)
  if [ ! -f "${records[0]}" ] || [ ${#records[@]} -ne 1 ]; then
    fail "with capture: expected one record file, found: $(ls -A "$dir/records" | tr '\n' ' ')"; return
  fi
  if ! "$inspect" show "${records[0]}" --symbols "$out" --json >"$dir/show.json" 2>"$dir/show.stderr"; then
    fail "crash-inspect show failed: $(head -c 400 "$dir/show.stderr")"; return
  fi
  local verdict
  if ! verdict="$(python3 - "$dir/show.json" "$signal" "$@" <<'PY'
import json, os, sys
record = json.load(open(sys.argv[1]))
signal = int(sys.argv[2])
expected = sys.argv[3:]
if os.environ.get("variant", "").endswith("-frames") and expected[:1] in (["arm64_crash_null"], ["arm64_crash_trap"]):
    # A leaf function sets up no frame record: without unwind tables its caller (the return
    # address still in lr) is not found, as the Swift backtracer does not find it either
    # (CrashReporter.docc, "Deploying",). The rest of the chain must be there.
    expected = [name for name in expected if name != "arm64_level2"]
problems = []
partial = os.environ.get("expect_partial", "")
if partial:
    # The record stops where the salvage wrote the frames found so far, and says so.
    if record.get("complete") is not False:
        problems.append("expected a record cut short by the unwinder's fault")
    if not any(partial in note for note in record.get("notes") or []):
        problems.append(f"no note contains {partial!r}: {record.get('notes')}")
elif record.get("complete") is not True:
    problems.append(f"incomplete: {record.get('incompleteReason')}")
if record.get("signal") != signal:
    problems.append(f"signal {record.get('signal')}, expected {signal}")
code_name = os.environ.get("expect_code", "")
if code_name and record.get("codeName") != code_name:
    problems.append(f"si_code {record.get('codeName')}, expected {code_name}")
fault = os.environ.get("expect_fault", "")
address = int(record.get("faultAddress") or "-1", 16) if record.get("faultAddress") else None
if fault == "zero" and address != 0:
    problems.append(f"fault address {record.get('faultAddress')}, expected 0x0")
if fault == "nonzero" and not address:
    problems.append(f"fault address {record.get('faultAddress')}, expected one")
threads = record.get("threads") or []
crashed = [t for t in threads if t.get("crashed")]
if not crashed:
    problems.append("no crashed thread")
    names = []
else:
    # Outer frames of an inlined group share an index; keep every entry's symbol, in order.
    names = [f.get("symbol") or f"<{f.get('address')}>" for f in crashed[0].get("frames", [])]
    at = 0
    for want in expected:
        # "~name": a frame whose symbol contains it (demangled Swift names); else the exact name.
        matches = (lambda name: want[1:] in name) if want.startswith("~") else (lambda name: name == want)
        while at < len(names) and not matches(names[at]):
            at += 1
        if at == len(names):
            problems.append(f"frames do not name {want} after the earlier ones: {names[:12]}")
            break
        at += 1
# No signed address in the record: every frame and lr fit the 48-bit user address space (a
# PAC signature sits in the bits above it). Frame 0 is the pc itself and may be anything.
for thread in threads:
    for index, frame in enumerate(thread.get("frames", [])):
        address = int(frame.get("address", "0x0"), 16)
        if index > 0 and address >> 48:
            problems.append(f"thread {thread.get('tid')} frame {index}: {frame.get('address')} has bits above 48")
    lr = (thread.get("registers") or {}).get("lr")
    if lr and int(lr, 16) >> 48:
        problems.append(f"thread {thread.get('tid')}: lr {lr} has bits above 48")
lr = (record.get("registers") or {}).get("lr")
if lr and int(lr, 16) >> 48:
    problems.append(f"crashed thread: lr {lr} has bits above 48")
# The pac-frames variant runs as if libunwind were not installed: every record says so.
frames_only = os.environ.get("variant", "").endswith("-frames")
missing = [n for n in record.get("notes") or [] if n.startswith("libunwind could not be loaded at start")]
if frames_only and not missing:
    problems.append(f"no note that libunwind was not loaded: {record.get('notes')}")
if not frames_only and missing:
    problems.append(f"libunwind was not loaded: {missing}")
bottom = os.environ.get("expect_bottom", "")
if crashed and bottom:
    # A runaway recursion: the innermost and the outermost frames are both kept.
    if not crashed[0].get("truncated") or not crashed[0].get("omittedFrames"):
        problems.append("a runaway stack not marked truncated with omitted frames")
    if bottom not in names[-8:]:
        problems.append(f"{bottom} not among the outermost frames: {names[-8:]}")
other = os.environ.get("expect_other", "")
if other:
    stopped = [t for t in threads if not t.get("crashed") and t.get("stack") == "stopped"
               and other in [f.get("symbol") for f in t.get("frames", [])]]
    if not stopped:
        problems.append(f"no stopped thread whose frames name {other}: "
                        + str([(t.get("stack"), [f.get("symbol") for f in t.get("frames", [])][:4]) for t in threads]))
unstoppable = os.environ.get("expect_unstoppable", "")
if unstoppable:
    # A thread that blocks every signal cannot be stopped without the ptrace helper, which
    # qemu-user cannot run: it is listed, not stopped, with no frames, and the crash goes on.
    listed = [t for t in threads if not t.get("crashed") and t.get("stack") == "notStopped"]
    if len(listed) < int(unstoppable):
        problems.append(f"{len(listed)} threads listed as not stopped, expected at least {unstoppable}")
if problems:
    print("; ".join(problems))
    sys.exit(1)
print(" → ".join(names[:8]))
PY
)"; then
    fail "record ${records[0]}: $verdict"; return
  fi
  local shape="complete"
  [ -n "$expect_partial" ] && shape="cut short, with the note"
  local dump=""
  if [ "$variant" = plain ]; then
    dump="$(check_minidump "${records[0]}" "$dir" "$signal" "$1")" || { fail "minidump: $dump"; return; }
    dump="; minidump $dump"
  fi
  echo "ok     $variant $scenario: $death; record $shape; frames $verdict$dump"
}

# check_minidump RECORD DIR SIGNAL FIRST-FRAME: the record exported with `crash-inspect export
# --minidump` (an aarch64 minidump: Breakpad's ARM64 context, 0x8003), read by PyPI's minidump
# parser (Tests/Oracles/minidump_check.py: one 796-byte context per recorded thread, the crashed
# thread's pc and sp as recorded, the signal, the executable's build-id in its CodeView record)
# and by lldb-16 with the aarch64 program (every thread listed, the signal as the stop reason, the
# crashed thread's backtrace naming FIRST-FRAME, unless it is an async name lldb does not know).
check_minidump() {
  local record=$1 dir=$2 signal=$3 first=$4
  local python=.venv-oracles/bin/python lldb
  lldb="$(command -v lldb-16 || true)"
  [ -x "$python" ] || { echo "no $python: run scripts/setup.sh"; return 1; }
  [ -n "$lldb" ] || { echo "no lldb-16: run scripts/setup.sh"; return 1; }
  "$inspect" export --minidump "$record" -o "$dir/record.dmp" 2>"$dir/export.stderr" \
    || { echo "export failed: $(head -c 400 "$dir/export.stderr")"; return 1; }
  "$python" Tests/Oracles/minidump_check.py "$dir/record.dmp" >"$dir/minidump.json" 2>"$dir/minidump.stderr" \
    || { echo "the parser refused it: $(head -c 400 "$dir/minidump.stderr")"; return 1; }
  "$lldb" --no-lldbinit -b -c "$dir/record.dmp" "$out/arm64-crashes-plain" -o "thread list" -o "bt" \
    >"$dir/lldb.out" 2>&1 || { echo "lldb-16 failed: $(tail -c 400 "$dir/lldb.out")"; return 1; }
  python3 - "$dir/show.json" "$dir/minidump.json" "$dir/lldb.out" "$signal" "$first" "$out/arm64-crashes-plain" <<'PY'
import json, subprocess, sys
record, dump = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
lldb, signal, first, program = open(sys.argv[3]).read(), int(sys.argv[4]), sys.argv[5], sys.argv[6]
problems = []
if dump["architecture"] != "AARCH64":
    problems.append(f"architecture {dump['architecture']}")
tids = [t["tid"] for t in record["threads"]]
if [t["tid"] for t in dump["threads"]] != tids:
    problems.append(f"threads {[t['tid'] for t in dump['threads']]}, recorded {tids}")
if any(t["contextSize"] != 796 for t in dump["threads"]):
    problems.append("a context is not Breakpad's 796-byte ARM64 one")
registers = record["registers"]
crashed = next(t for t in record["threads"] if t["crashed"])
mine = next((t for t in dump["threads"] if t["tid"] == crashed["tid"]), {})
if mine.get("pc") != int(registers["pc"], 16) or mine.get("sp") != int(registers["sp"], 16):
    problems.append(f"crashed thread pc/sp {mine.get('pc')}/{mine.get('sp')}, recorded {registers['pc']}/{registers['sp']}")
exception = dump.get("exception") or {}
if exception.get("code") != signal or exception.get("thread") != crashed["tid"]:
    problems.append(f"exception {exception}")
build_id = subprocess.run(["readelf", "-n", program], capture_output=True, text=True).stdout.split("Build ID: ")[1].split()[0]
if not any(m["name"].endswith("/arm64-crashes-plain") and m["buildID"] == build_id and m["cvSignature"] == 0x4270454C for m in dump["modules"]):
    problems.append(f"no BpEL CodeView record with the program's build-id {build_id}")
for tid in tids:
    if f"tid = {tid}," not in lldb:
        problems.append(f"lldb does not list thread {tid}")
names = {4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 11: "SIGSEGV"}
if f"stop reason = signal {names.get(signal, signal)}" not in lldb:
    problems.append("lldb's stop reason is not the signal")
backtrace = lldb.split("(lldb) bt", 1)[-1]
if not first.startswith("~") and f"`{first}" not in backtrace:
    problems.append(f"lldb's backtrace does not name {first}: {backtrace[:600]}")
if problems:
    print("; ".join(problems))
    sys.exit(1)
print(f"read by the parser ({len(tids)} threads) and lldb-16")
PY
}

echo "== under $qemu -cpu max, each crash without and with capture"
# pac-frames: the PAC build again, as if libunwind.so.8 were not installed (a slim image): every
# thread walked by its frame records alone.
for variant in plain pac pac-frames; do
  export variant
  # What the record must say beyond the signal and the frames (set per check, then cleared):
  expect_code="" expect_fault="" expect_bottom="" expect_other="" expect_unstoppable="" expect_partial=""
  export expect_code expect_fault expect_bottom expect_other expect_unstoppable expect_partial
  clear_expect() { expect_code="" expect_fault="" expect_bottom="" expect_other="" expect_unstoppable="" expect_partial=""; }
  segv_null() { clear_expect; expect_code=SEGV_MAPERR expect_fault=zero; }

  segv_null
  check null-dereference 11 arm64_crash_null arm64_level2 arm64_level1 main
  clear_expect
  check trap 5 arm64_crash_trap arm64_level2 arm64_level1 main
  check abort 6 arm64_crash_abort arm64_level2 arm64_level1 main
  segv_null
  check call-null 11 arm64_crash_call_null arm64_level2 arm64_level1 main
  # The program's own SIGSEGV handler (SA_RESETHAND, no SA_ONSTACK) runs in both runs, and the
  # fault it returns to is the one recorded.
  marker="arm64-crashes: previous handler ran"
  check previous-handler 11 arm64_crash_null arm64_level2 arm64_level1 main
  marker=""
  # A second thread blocked in read(): stopped by the stop signal and unwound from its context.
  segv_null; expect_other=arm64_blocked_reader
  check stopped-thread 11 arm64_crash_null arm64_level2 arm64_level1 main
  # A second thread that blocks every signal: not stoppable here (the ptrace helper cannot run
  # under qemu-user), so no hang, the same death, and the thread listed as not stopped. (qemu's
  # own thread, which blocks our stop signal too, is listed the same way: at least 2.)
  segv_null; expect_unstoppable=2
  check blocking-thread 11 arm64_crash_null arm64_level2 arm64_level1 main
  # A 256 KiB thread stack overflowing into its guard page: SEGV_ACCERR at the guard, the
  # innermost frames and the outermost ones (the thread's start) both kept.
  clear_expect; expect_code=SEGV_ACCERR expect_fault=nonzero expect_bottom=arm64_overflow_thread
  check thread-overflow 11 arm64_recurse arm64_recurse
  # A fault inside the unwinder (injected by a test hook after the crashed thread's fourth
  # frame): the frames found so far are in the record (a .partial one, with a note), and the
  # process still dies of its signal.
  segv_null; expect_partial="the unwinder faulted on the crashed thread's stack after 4 frames"
  check unwinder-fault 11 arm64_crash_null arm64_level2 arm64_level1 main
  # A crash in an async partial function (hand-made: x22 and two AsyncContexts, the resume points
  # signed in the PAC build): the async callers follow it, stripped, named by their symbols.
  segv_null
  check async-chain 11 "~arm64crashes.leaf()" "~arm64crashes.middle()" "~arm64crashes.outer()"
done

# A record of the live process (cc_snapshot, what hang detection writes): the process goes on and
# exits 0, a second thread's nanosleep is not cut short, and the record reads back whole as a
# snapshot (under qemu-user the ptrace helper cannot run: the threads are listed without frames).
for variant in plain pac; do
  dir="$out/records-$variant-snapshot"
  rm -rf "$dir"; mkdir -p "$dir"
  status=0
  name=$(timeout 120 "$qemu" -cpu max -L "$runroot" "$out/arm64-crashes-$variant" snapshot "$dir" 2>"$out/snapshot-$variant.stderr") || status=$?
  kind=""
  [ "$status" -eq 0 ] && [ -f "$dir/$name" ] && kind=$("$inspect" show --json "$dir/$name" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["kind"] if d["complete"] else "incomplete")')
  if [ "$status" -eq 0 ] && [ "$kind" = snapshot ]; then
    echo "ok     $variant snapshot: exit 0, the sleep not cut short, record whole"
  else
    echo "FAILED $variant snapshot: exit $status, record kind '$kind' ($(head -c 300 "$out/snapshot-$variant.stderr"))"
    failures=$((failures + 1))
  fi
done

if [ "$failures" -ne 0 ]; then echo "arm64-check: $failures failed"; exit 1; fi
echo "arm64-check: all passed"
