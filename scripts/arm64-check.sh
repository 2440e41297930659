#!/usr/bin/env bash
# arm64 under emulation (scripts/test.sh runs it; about a minute):
#  1. every C file of the core (CShims, Sources/CCrashRecordLayout) compiles for aarch64 with
#     aarch64-linux-gnu-gcc -Wall -Wextra -Werror, as debug (-O0) and release (-O2) flags, and so
#     does its C++ file (CShims/crash/cc_terminate.cpp) with aarch64-linux-gnu-g++;
#  2. the core and Tests/Arm64Crashes/arm64_crashes.c link into two C-only aarch64 programs (the
#     C++ side left out: cc_cxx.c's weak stubs stand in for it, and no libstdc++ is linked), one
#     plain and one with pointer authentication (-mbranch-protection=standard), and, with
#     cc_terminate.cpp and Tests/Arm64Crashes/arm64_cxx.cpp, into two C++ ones linked with g++
#     (libstdc++), arm64-crashes-cxx-plain and -pac. Each runs under qemu-aarch64-static -cpu max
#     (which executes PAC with real keys), once without capture and once with, per crash:
#     null-dereference, trap (__builtin_trap), abort, call-null (a call through NULL),
#     signal-handler (a null store in the program's own SIGUSR2 handler; not with frame records alone),
#     previous-handler (the program's own SA_RESETHAND handler without SA_ONSTACK, chained),
#     stopped-thread (a second thread in read(), stopped and unwound), blocking-thread (a second
#     thread blocking every signal), thread-overflow (a 256 KiB thread stack overflowing into its
#     guard page), unwinder-fault (a test hook faults inside the unwinder after the fourth
#     frame), async-chain (a hand-made Swift async chain), heap-object (a null store in a
#     function whose argument is a malloc'd object starting with a known text) — all with the
#     C-only programs — and cxx-exception (std::runtime_error("arm64 exception text") thrown two
#     frames down and caught by no one), with the C++ programs;
#  3. the PAC builds run a third time with the unwinder told to use frame records alone
#     ("pac-frames", a test hook: what code without call-frame information gets), each record
#     with its note; a leaf crash function's caller is then not expected;
#  4. each death is judged against the same crash without capture, and the record it left is
#     read back with the x86-64 crash-inspect (show --json): complete (unwinder-fault: cut short,
#     with its note), the expected signal, si_code and fault address, crashed-thread frames
#     naming arm64_crash_* → arm64_level2 → arm64_level1 → main in that order (thread-overflow:
#     the innermost and the outermost frames, the middle left out), what the record says of the
#     other threads, and no frame or lr with bits above the 48-bit address space (a signed
#     return address would have them);
#  5. in every record (a cut-short one stops before its windows and resources: not asked for them):
#     - the memory windows (cc__write_pointed_memory): each "*" window is labelled "*x<n>",
#       "*fp", "*lr" or "*sp+<offset>" (8-aligned, within the 32 words read) — never "*sp", "*pc"
#       or "*pstate", which the code leaves out by name — is at most 256 bytes, lies around the
#       value its register (or the stack word at sp+<offset>, read from the record's stack
#       window) holds, and that value is no small number, no non-canonical address, not in the
#       stack window and not in an image; at most 48 of them. heap-object: a "*x<n>" or
#       "*sp+<n>" window holds the object's text where its value points;
#     - the resources: the CPU count is this shell's affinity count (≥ 1), the open descriptors
#       are more than 0 and fewer than the soft RLIMIT_NOFILE, the soft and hard limits are this
#       shell's (ulimit -Sn, -Hn: as the process had them, before the handler raised them), and
#       the CPU identity is what the core can read here: MIDR_EL1 as the kernel exports it in
#       sysfs. qemu-user emulates the CPU, not /sys: on an x86-64 host that file is absent, so the
#       record must have no CPU identity (an mrs of MIDR_EL1 under -cpu max would give
#       0x000f0510: implementer 0, part 0x051 'Q', but the core does not execute one); on an
#       aarch64 host, the value in its file;
#     - cxxException: none, except for cxx-exception, where it is the mangled type
#       St13runtime_error (demangled by the host's __cxa_demangle to std::runtime_error), what()
#       "arm64 exception text", whatState "what"; that death must be SIGABRT with the status it
#       has without capture, libstdc++'s lines on stderr ("terminate called after throwing an
#       instance of 'std::runtime_error'" and its what()) the same in both runs, and the frames
#       must go abort → the verbose terminate handler → capture's cc_terminate → __cxa_throw →
#       arm64_cxx_throw → arm64_cxx_middle → arm64_crash_cxx → arm64_level2 → arm64_level1 → main
#       (lldb on its minidump: capture's cc_terminate);
#  6. each record of the plain builds is exported with `crash-inspect export --minidump` and read
#     by PyPI's minidump parser and by lldb-16 with the aarch64 program (check_minidump);
#  7. the guarded heap (Sources/CrashCaptureGuardedHeap linked into Tests/Arm64Crashes/
#     arm64_guarded_heap.c, plain and PAC): a use after free and a double free, judged as in 4,
#     and the record's two stacks name the functions with no PAC bits left (qemu-user has no
#     process_vm_readv: their pipe fallback is what runs here).
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
#   apt-get install -y gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user-static \
#     libc6-dev:arm64 libstdc++6:arm64
#   scripts/arm64-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build-arm64
mkdir -p "$out"

cc=aarch64-linux-gnu-gcc
cxx=aarch64-linux-gnu-g++
qemu=qemu-aarch64-static
# At run time the aarch64 libraries are Debian's multiarch ones (libc6:arm64, libstdc++6:arm64
# in /lib/aarch64-linux-gnu), not the cross toolchain's copy in
# /usr/aarch64-linux-gnu: with that one every pthread_create hangs under qemu-aarch64-static 7.2
# on this host.
runroot=/
missing=()
command -v "$cc" >/dev/null || missing+=("$cc (gcc-aarch64-linux-gnu)")
command -v "$cxx" >/dev/null || missing+=("$cxx (g++-aarch64-linux-gnu)")
command -v "$qemu" >/dev/null || missing+=("$qemu (qemu-user-static)")
[ -e /lib/ld-linux-aarch64.so.1 ] || missing+=("/lib/ld-linux-aarch64.so.1 (libc6:arm64)")
[ -e /usr/lib/aarch64-linux-gnu/libstdc++.so.6 ] || missing+=("/usr/lib/aarch64-linux-gnu/libstdc++.so.6 (libstdc++6:arm64)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "arm64-check: missing: ${missing[*]}" >&2
  echo "arm64-check: see the install line at the top of $0" >&2
  exit 2
fi

includes=(-I CShims -I CShims/include -I Sources/CCrashRecordLayout/include)
mapfile -t core < <(find CShims -name '*.c' | sort)
core+=(Sources/CCrashRecordLayout/layout.c)
mapfile -t core_cxx < <(find CShims -name '*.cpp' | sort)

echo "== aarch64: -Wall -Wextra -Werror over the core (${#core[@]} C files, ${#core_cxx[@]} C++), debug and release flags"
for file in "${core[@]}"; do
  "$cc" -fsyntax-only -Wall -Wextra -Werror -O0 -DDEBUG=1 "${includes[@]}" "$file"
  "$cc" -fsyntax-only -Wall -Wextra -Werror -O2 "${includes[@]}" "$file"
done
for file in "${core_cxx[@]}"; do
  "$cxx" -fsyntax-only -Wall -Wextra -Werror -O0 -DDEBUG=1 "${includes[@]}" "$file"
  "$cxx" -fsyntax-only -Wall -Wextra -Werror -O2 "${includes[@]}" "$file"
done
echo "   no warnings"

echo "== aarch64: the crash programs (Tests/Arm64Crashes) linked with the core, plain and with PAC, C-only and C++"
# -g and --build-id: crash-inspect symbolicates by build-id; frame pointers and no sibling
# calls keep the call chain the checks name. The second build signs return addresses with
# pointer authentication (-mbranch-protection=standard: pac-ret and BTI, as Debian, Ubuntu and
# Fedora build many arm64 libraries), which qemu's -cpu max executes with real keys.
# The C files are compiled once per build and linked twice: by gcc alone into the C-only program
# (cc_cxx.c's weak cc__cxx_install and cc__cxx_uninstall, no libstdc++), and by g++ with the C++
# objects (cc_terminate.cpp's definitions win over the weak ones; libstdc++ linked) into the C++ one.
for variant in plain pac; do
  flags=(-g -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra -Werror "${includes[@]}")
  [ "$variant" = pac ] && flags+=(-mbranch-protection=standard)
  objects="$out/objects-$variant"
  rm -rf "$objects" && mkdir -p "$objects"
  c_objects=() cxx_objects=()
  for file in Tests/Arm64Crashes/arm64_crashes.c "${core[@]}"; do
    c_objects+=("$objects/$(basename "$file").o")
    "$cc" "${flags[@]}" -c "$file" -o "${c_objects[-1]}"
  done
  for file in Tests/Arm64Crashes/arm64_cxx.cpp "${core_cxx[@]}"; do
    cxx_objects+=("$objects/$(basename "$file").o")
    "$cxx" "${flags[@]}" -c "$file" -o "${cxx_objects[-1]}"
  done
  "$cc" -Wl,--build-id "${c_objects[@]}" -lpthread -ldl -o "$out/arm64-crashes-$variant"
  "$cxx" -Wl,--build-id "${c_objects[@]}" "${cxx_objects[@]}" -lpthread -ldl -o "$out/arm64-crashes-cxx-$variant"
  # The C-only program must need no C++ runtime, the C++ one libstdc++.
  if aarch64-linux-gnu-readelf -d "$out/arm64-crashes-$variant" | grep -q 'NEEDED.*libstdc++'; then
    echo "arm64-check: $out/arm64-crashes-$variant (C only) needs libstdc++" >&2; exit 1
  fi
  if ! aarch64-linux-gnu-readelf -d "$out/arm64-crashes-cxx-$variant" | grep -q 'NEEDED.*libstdc++\.so\.6'; then
    echo "arm64-check: $out/arm64-crashes-cxx-$variant does not link libstdc++" >&2; exit 1
  fi
  echo "   built $out/arm64-crashes-$variant (C only) and $out/arm64-crashes-cxx-$variant (C++, libstdc++)"
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

# What the records' resources must say (step 5 of the header): this shell's CPU affinity and
# descriptor limits, which the program under qemu inherits, and MIDR_EL1 as the program can read
# it from sysfs (qemu-user passes the host's /sys through: no such file on an x86-64 host).
expect_cpus=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
expect_nofile_soft=$(ulimit -Sn) expect_nofile_hard=$(ulimit -Hn)
midr_file=/sys/devices/system/cpu/cpu0/regs/identification/midr_el1
expect_cpu=""
if [ -r "$midr_file" ]; then
  expect_cpu=$(python3 -c 'import sys; m = int(open(sys.argv[1]).read(), 16)
print(f"implementer 0x{(m >> 24) & 0xff:x} part 0x{(m >> 4) & 0xfff:x} r{(m >> 20) & 0xf}p{m & 0xf}")' "$midr_file")
fi
export expect_cpus expect_nofile_soft expect_nofile_hard expect_cpu

# run SCENARIO MODE: runs the program ($program, C-only or C++) under qemu in a fresh directory;
# sets status and dir.
program=arm64-crashes
run() {
  dir="$out/run-$variant-$1-$2"
  rm -rf "$dir" && mkdir -p "$dir/records"
  set +e
  # In a subshell whose own stderr is discarded: bash's "Segmentation fault" job notice, not
  # the program's stderr (which goes to $dir/stderr). 128 + N: died of signal N.
  local binary=$out/$program-${variant%-frames} frames_only=0
  [ "$variant" != "${variant%-frames}" ] && frames_only=1
  ( ARM64_CRASHES_FRAME_RECORDS_ONLY=$frames_only timeout 120 "$qemu" -cpu max -L "$runroot" "$binary" "$1" "$dir/records" "$2" \
      >"$dir/stdout" 2>"$dir/stderr"; exit $? ) 2>/dev/null
  status=$?
  set -e
}

failures=0
marker=""   # a line both runs must print on stderr (set per check)
minidump_frame=""   # the frame lldb must name in the minidump, when not the first expected one (set per check)
same_stderr=""   # an extended regex: the stderr lines it matches must be the same in both runs (set per check)
fail() { echo "FAIL   $variant $scenario: $*"; failures=$((failures + 1)); }

# scenario signal expected-frames...
check() {
  scenario=$1 signal=$2
  shift 2
  local expected_status=$((128 + signal))

  run "$scenario" nocapture
  local plain_dir=$dir
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
  if [ -n "$same_stderr" ]; then
    local before after
    before=$(grep -E "$same_stderr" "$plain_dir/stderr" || true)
    after=$(grep -E "$same_stderr" "$dir/stderr" || true)
    if [ -z "$before" ] || [ "$before" != "$after" ]; then
      fail "stderr's lines /$same_stderr/ differ: without capture [$before], with [$after]"; return
    fi
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
import json, os, re, sys
record = json.load(open(sys.argv[1]))
signal = int(sys.argv[2])
expected = sys.argv[3:]
leaf_callers = {"arm64_crash_null": "arm64_level2", "arm64_crash_trap": "arm64_level2", "arm64_heap_use": "arm64_crash_heap_object"}
if os.environ.get("variant", "").endswith("-frames") and expected[:1] and expected[0] in leaf_callers:
    # A leaf function sets up no frame record: without its call-frame information its caller
    # (the return address still in lr) is not found, as the Swift backtracer's frame-pointer
    # walk does not find it either. The rest of the chain must be there.
    expected = [name for name in expected if name != leaf_callers[expected[0]]]
problems = []
said = []   # what the verdict says beyond the frames
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
# The pac-frames variant walks by frame records alone (a test hook): every record says so.
frames_only = os.environ.get("variant", "").endswith("-frames")
said_so = [n for n in record.get("notes") or [] if n.startswith("frames come from frame records only")]
if frames_only and not said_so:
    problems.append(f"no note that the frames come from frame records only: {record.get('notes')}")
if not frames_only and said_so:
    problems.append(f"frames from frame records only, where call-frame information was to be used: {said_so}")
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
# The memory windows around what the registers and the top of the stack point at
# (cc__write_pointed_memory): labelled "*<register>" or "*sp+<offset>"; never the stack or program
# counter or the flags (left out by name); each around its value, which is no small number, is
# canonical, and lies neither in the stack window nor in an image.
registers = record.get("registers") or {}
memory = record.get("memory") or []
def window_bytes(window):
    return bytes.fromhex(window.get("hex", ""))
sp = int(registers.get("sp", "0x0"), 16)
stack = next((m for m in memory if m["label"] == "stack"), None)
images = [(int(i["base"], 16), int(i["base"], 16) + int(i["size"])) for i in record.get("images") or []]
pointed = [m for m in memory if m["label"].startswith("*")]
if len(pointed) > 48:
    problems.append(f"{len(pointed)} pointed-memory windows, at most 48")
values = {}
for window in pointed:
    label, address, size = window["label"], int(window["address"], 16), len(window_bytes(window))
    name = label[1:]
    if name in ("sp", "pc", "pstate"):
        problems.append(f"a window {label}: the stack and program counters and the flags are left out")
        continue
    if name.startswith("sp+"):
        offset = int(name[3:]) if name[3:].isdigit() else -1
        start = int(stack["address"], 16) if stack else -1
        if offset < 0 or offset % 8 or offset >= 256 or start != sp:
            problems.append(f"window {label}: not one of the top 32 stack words in the stack window at sp")
            continue
        value = int.from_bytes(window_bytes(stack)[offset:offset + 8], "little")
    elif name in registers:
        value = int(registers[name], 16)
    else:
        problems.append(f"window {label}: names no register of the record")
        continue
    values[label] = value
    if size == 0 or size > 256 or not address <= value < address + 256:
        problems.append(f"window {label} ({size} bytes at {window['address']}) is not around its value {value:#x}")
    if value < 65536 or value >> 47:
        problems.append(f"window {label}: its value {value:#x} is a small number or not a user address")
    if stack and sp - 4096 <= value < int(stack["address"], 16) + len(window_bytes(stack)):
        problems.append(f"window {label}: its value {value:#x} is in the stack window")
    if any(low <= value < high for low, high in images):
        problems.append(f"window {label}: its value {value:#x} is in an image")
heap = os.environ.get("expect_heap", "")
if heap:
    # The object's first bytes where a register or a stack word points: "*x<n>" or "*sp+<n>".
    at = lambda w: values[w["label"]] - int(w["address"], 16)
    found = [w["label"] for w in pointed if w["label"] in values and at(w) >= 0
             and re.fullmatch(r"\*(x[0-9]+|sp\+[0-9]+)", w["label"])
             and window_bytes(w)[at(w):].startswith(heap.encode())]
    if not found:
        problems.append(f"no *x<n> or *sp+<n> window holds the heap object's {heap!r}: "
                        + str([(w["label"], w["address"]) for w in pointed]))
    else:
        said.append(f"the heap object in window {', '.join(found)}")
# The resources (not in a record cut short: they come after the crashed thread's frames).
resources = record.get("resources")
if not partial:
    if not resources:
        problems.append("no resources")
    else:
        cpus, open_fds = resources.get("cpuCount"), resources.get("openDescriptors")
        soft, hard = resources.get("descriptorLimit"), resources.get("descriptorHardLimit")
        limit = lambda text: None if text == "unlimited" else int(text)
        if not cpus or cpus < 1 or cpus != int(os.environ["expect_cpus"]):
            problems.append(f"resources: {cpus} CPUs, expected the affinity's {os.environ['expect_cpus']}")
        if soft != limit(os.environ["expect_nofile_soft"]) or hard != limit(os.environ["expect_nofile_hard"]):
            problems.append(f"resources: RLIMIT_NOFILE {soft}/{hard}, expected {os.environ['expect_nofile_soft']}/{os.environ['expect_nofile_hard']}")
        if not open_fds or open_fds <= 0 or (soft is not None and open_fds >= soft):
            problems.append(f"resources: {open_fds} descriptors open, expected more than 0 and fewer than {soft}")
        cpu = os.environ.get("expect_cpu") or None
        if resources.get("cpu") != cpu:
            problems.append(f"resources: CPU {resources.get('cpu')!r}, expected {cpu!r}"
                            + ("" if cpu else " (no sysfs MIDR_EL1 here: under qemu-user the core cannot read one)"))
        if os.environ.get("scenario") == "null-dereference":
            said.append(f"resources {cpus} CPUs, {open_fds} of {soft} descriptors, CPU {resources.get('cpu') or 'none (no sysfs MIDR_EL1 under qemu-user)'}")
# An uncaught C++ exception: only where one was thrown.
cxx = record.get("cxxException")
want_cxx = os.environ.get("expect_cxx", "")
if want_cxx:
    mangled, demangled, what = want_cxx.split("|")
    if not cxx:
        problems.append("no cxxException")
    elif (cxx.get("mangledType"), cxx.get("type"), cxx.get("what"), cxx.get("whatState")) != (mangled, demangled, what, "what"):
        problems.append(f"cxxException {cxx}, expected {mangled} ({demangled}), what() {what!r}")
    else:
        said.append(f"cxxException {cxx['summary']}")
elif cxx:
    problems.append(f"a cxxException where none was thrown: {cxx}")
if problems:
    print("; ".join(problems))
    sys.exit(1)
print(" → ".join(names[:8]) + "".join("; " + line for line in said))
PY
)"; then
    fail "record ${records[0]}: $verdict"; return
  fi
  local shape="complete"
  [ -n "$expect_partial" ] && shape="cut short, with the note"
  local dump=""
  if [ "$variant" = plain ]; then
    dump="$(check_minidump "${records[0]}" "$dir" "$signal" "${minidump_frame:-$1}" "$out/$program-plain")" || { fail "minidump: $dump"; return; }
    dump="; minidump $dump"
  fi
  echo "ok     $variant $scenario: $death; record $shape; frames $verdict$dump"
}

# check_minidump RECORD DIR SIGNAL FIRST-FRAME PROGRAM: the record exported with `crash-inspect
# export --minidump` (an aarch64 minidump: Breakpad's ARM64 context, 0x8003), read by PyPI's
# minidump parser (Tests/Oracles/minidump_check.py: one 796-byte context per recorded thread, the
# crashed thread's pc and sp as recorded, the signal, the executable's build-id in its CodeView
# record) and by lldb-16 with the aarch64 PROGRAM (every thread listed, the signal as the stop
# reason, the crashed thread's backtrace naming FIRST-FRAME, unless it is an async name lldb does
# not know).
check_minidump() {
  local record=$1 dir=$2 signal=$3 first=$4 program=$5
  local python=.venv-oracles/bin/python lldb
  lldb="$(command -v lldb-16 || true)"
  [ -x "$python" ] || { echo "no $python: run scripts/setup.sh"; return 1; }
  [ -n "$lldb" ] || { echo "no lldb-16: run scripts/setup.sh"; return 1; }
  "$inspect" export --minidump "$record" -o "$dir/record.dmp" 2>"$dir/export.stderr" \
    || { echo "export failed: $(head -c 400 "$dir/export.stderr")"; return 1; }
  "$python" Tests/Oracles/minidump_check.py "$dir/record.dmp" >"$dir/minidump.json" 2>"$dir/minidump.stderr" \
    || { echo "the parser refused it: $(head -c 400 "$dir/minidump.stderr")"; return 1; }
  "$lldb" --no-lldbinit -b -c "$dir/record.dmp" "$program" -o "thread list" -o "bt" \
    >"$dir/lldb.out" 2>&1 || { echo "lldb-16 failed: $(tail -c 400 "$dir/lldb.out")"; return 1; }
  python3 - "$dir/show.json" "$dir/minidump.json" "$dir/lldb.out" "$signal" "$first" "$program" <<'PY'
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
if not any(m["name"].endswith("/" + program.rsplit("/", 1)[-1]) and m["buildID"] == build_id and m["cvSignature"] == 0x4270454C for m in dump["modules"]):
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
# pac-frames: the PAC build again, every thread walked by its frame records alone (a test hook).
for variant in plain pac pac-frames; do
  export variant scenario
  # What the record must say beyond the signal and the frames (set per check, then cleared):
  expect_code="" expect_fault="" expect_bottom="" expect_other="" expect_unstoppable="" expect_partial=""
  expect_heap="" expect_cxx=""
  export expect_code expect_fault expect_bottom expect_other expect_unstoppable expect_partial expect_heap expect_cxx
  clear_expect() {
    expect_code="" expect_fault="" expect_bottom="" expect_other="" expect_unstoppable="" expect_partial=""
    expect_heap="" expect_cxx=""
  }
  segv_null() { clear_expect; expect_code=SEGV_MAPERR expect_fault=zero; }

  segv_null
  check null-dereference 11 arm64_crash_null arm64_level2 arm64_level1 main
  clear_expect
  check trap 5 arm64_crash_trap arm64_level2 arm64_level1 main
  check abort 6 arm64_crash_abort arm64_level2 arm64_level1 main
  segv_null
  check call-null 11 arm64_crash_call_null arm64_level2 arm64_level1 main
  # A null store inside the program's own SIGUSR2 handler: unwound through the signal
  # trampoline (its CFI) to raise and on. Frame records alone stop at the trampoline, which is
  # in no image under qemu-user: not checked in the pac-frames variant.
  if [ "$variant" != pac-frames ]; then
    segv_null
    check signal-handler 11 arm64_crash_null arm64_usr2_handler raise arm64_crash_in_signal_handler arm64_level2 arm64_level1 main
  fi
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
  # A null store in a function whose argument (and its caller's kept value) is a malloc'd object:
  # the record keeps a window of it, labelled by the register or stack word pointing at it.
  segv_null; expect_heap="CrashCapture arm64 heap object!"
  check heap-object 11 arm64_heap_use arm64_crash_heap_object arm64_level2 arm64_level1 main
  # An uncaught std::runtime_error, with the C++ program: capture's terminate handler (chained in
  # front of libstdc++'s verbose one) notes its type and what(), the verbose one prints them and
  # aborts as without capture.
  clear_expect; expect_cxx="St13runtime_error|std::runtime_error|arm64 exception text"
  program=arm64-crashes-cxx minidump_frame="(anonymous namespace)::cc_terminate()"
  marker="terminate called after throwing an instance of 'std::runtime_error'"
  same_stderr="^(terminate called|  what\(\): )"
  check cxx-exception 6 abort "__gnu_cxx::__verbose_terminate_handler()" "(anonymous namespace)::cc_terminate()" \
    __cxa_throw arm64_cxx_throw arm64_cxx_middle arm64_crash_cxx arm64_level2 arm64_level1 main
  program=arm64-crashes minidump_frame="" marker="" same_stderr=""
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

# The guarded heap (Sources/CrashCaptureGuardedHeap's allocator, every allocation sampled) on
# aarch64, plain and with PAC: a use after free faults and a double free aborts as without
# capture, and the record's guardedHeap names the error, the 48-byte size, offset 0, and stacks
# that reach gh_allocate_in_c and gh_free_in_c (the allocator's own malloc and free may come
# first: gcc has no musttail) with no address above 48 bits (a PAC-signed return address).
for variant in plain pac; do
  objects="$out/objects-$variant"
  flags=(-g -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra -Werror "${includes[@]}"
         -I Sources/CrashCaptureGuardedHeap/include -I Sources/CGuardedHeapScenarios/include)
  [ "$variant" = pac ] && flags+=(-mbranch-protection=standard)
  heap_objects=()
  for file in Tests/Arm64Crashes/arm64_guarded_heap.c Sources/CrashCaptureGuardedHeap/cc_guarded_malloc.c \
              Sources/CGuardedHeapScenarios/gh_scenarios.c; do
    heap_objects+=("$objects/heap-$(basename "$file").o")
    "$cc" "${flags[@]}" -c "$file" -o "${heap_objects[-1]}"
  done
  for file in "${core[@]}"; do heap_objects+=("$objects/$(basename "$file").o"); done
  "$cc" -Wl,--build-id "${heap_objects[@]}" -lpthread -ldl -o "$out/arm64-guarded-heap-$variant"
  for scenario in use-after-free-write double-free; do
    expected=139 error=heap-use-after-free
    [ "$scenario" = double-free ] && expected=134 error=double-free
    dir="$out/run-$variant-heap-$scenario"
    statuses=()
    for mode in nocapture capture; do
      rm -rf "$dir/$mode" && mkdir -p "$dir/$mode/records"
      set +e
      ( CRASHCAPTURE_GUARDED_HEAP=1:4096 timeout 120 "$qemu" -cpu max -L "$runroot" "$out/arm64-guarded-heap-$variant" \
          "$scenario" "$dir/$mode/records" "$mode" >"$dir/$mode/stdout" 2>"$dir/$mode/stderr"; exit $? ) 2>/dev/null
      statuses+=($?)
      set -e
    done
    death="${statuses[1]}"
    if [ "${statuses[1]}" -eq 127 ] && [ "$expected" -eq 139 ] \
       && grep -q 'cpu_exec: assertion failed: (cpu == current_cpu)' "$dir/capture/stderr"; then
      death="127 (qemu quirk)"
    elif [ "${statuses[1]}" -ne "$expected" ]; then death="${statuses[1]}, expected $expected"; fi
    record=$(ls "$dir"/capture/records/*.ccrec 2>/dev/null | head -1)
    verdict=$( { [ -n "$record" ] && "$inspect" show "$record" --symbols "$out" --json; } 2>"$dir/show.stderr" | python3 -c '
import json, sys
error, want_status, got_status = sys.argv[1], sys.argv[2], sys.argv[3]
problems = []
if got_status != want_status: problems.append(f"without capture: status {got_status}, expected {want_status}")
try:
    heap = json.load(sys.stdin).get("guardedHeap") or {}
except ValueError:
    heap = {}
    problems.append("no record read back")
got_error, size, offset = heap.get("error"), heap.get("allocationSize"), heap.get("offset")
if got_error != error: problems.append(f"error {got_error!r}")
if size != 48 or offset != 0: problems.append(f"size {size}, offset {offset}")
for key, function in (("allocationStack", "gh_allocate_in_c"), ("freeStack", "gh_free_in_c")):
    frames = heap.get(key) or []
    names = [f.get("symbol") or f.get("address") for f in frames]
    signed = [f["address"] for f in frames if int(f["address"], 16) >> 48]
    if signed: problems.append(f"{key}: addresses above 48 bits {signed[:3]}")
    first = next((n for n in names if n not in ("malloc", "free")), None)
    if first != function: problems.append(f"{key} starts {names[:4]}, not at {function}")
print("; ".join(problems) if problems else "ok")
' "$error" "$expected" "${statuses[0]}")
    case "$death" in
      127*|"$expected") ;;
      *) verdict="with capture: status $death; $verdict" ;;
    esac
    if [ "$verdict" = ok ]; then
      echo "ok     $variant guarded heap $scenario: exit $death, as without capture; $error of 48 bytes, allocated in gh_allocate_in_c, freed in gh_free_in_c"
    else
      echo "FAILED $variant guarded heap $scenario: $verdict ($(head -c 300 "$dir/capture/stderr"))"
      failures=$((failures + 1))
    fi
  done
done

if [ "$failures" -ne 0 ]; then echo "arm64-check: $failures failed"; exit 1; fi
echo "arm64-check: all passed"
