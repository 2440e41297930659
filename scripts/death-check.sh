#!/usr/bin/env bash
# How a captured process dies (docs/decisions/return-to-fault.md): the FINAL signal a crash ends
# with — its siginfo as the kernel delivered it (strace), the exit status, and the pc and sp in
# the core dump when cores are written — must be the one the same crash ends with without
# CrashCapture. Tests/DeathProbe/death_probe.c is linked with the C core (x86-64, native) and each
# crash runs twice under `setarch -R` (same addresses), without and with capture:
#   segv-maperr segv-accerr segv-gp bus-adrerr fpe-intdiv builtin-trap illegal breakpoint abort
#   wait-kill (SIGSEGV sent by kill(1) from outside): same final siginfo, status, pc/sp;
#   overtake: SIGXFSZ, SIGPROF and a process-directed SIGSEGV sent while the handler runs: the
#     death is still the fault's (SEGV_MAPERR at 0), no handler of the program runs;
#   overtake-thread: the same three sent to the crashing thread (tgkill);
#   bus-grown: the file whose missing page faulted is grown by another process while the
#     handler runs: the process must still die of that SIGBUS (BUS_ADRERR), not run on.
# The overtake scenarios count only when the sender saw the handler still running (retried).
#   scripts/death-check.sh            the checks (exit 1 on any failure)
#   scripts/death-check.sh --variants also the evaluated alternatives (docs/decisions/return-to-fault-eval.patch):
#                                     prints the table for queue / refault-unblock / refault-blockall,
#                                     asserts nothing about them
#   scripts/death-check.sh --harness BIN
#                                     also every scenario of that crash-harness build with Swift's
#                                     backtracer on, as a Swift program has it by default, with and
#                                     without capture: the same ending, as many backtracer reports,
#                                     nothing of the process left running (crash-harness verify
#                                     --backtracer; Sources/CrashScenarios/BacktracerAlongside.swift)
# Needs gcc, strace, zlib; eu-readelf (elfutils) for the core comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
variants=0 harness=""
while [ $# -gt 0 ]; do
  case $1 in
    --variants) variants=1 ;;
    --harness) harness=$2; shift ;;
    *) echo "death-check: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
out=$root/.build-death
rm -rf "$out" && mkdir -p "$out"
command -v strace >/dev/null || { echo "death-check: strace is missing" >&2; exit 2; }
command -v setarch >/dev/null || { echo "death-check: setarch is missing" >&2; exit 2; }
readelf=$(command -v eu-readelf || true)

includes=(-I CShims -I CShims/include -I Sources/CCrashRecordLayout/include)
build() { # output core-directory extra-flags...
  local bin=$1 dir=$2; shift 2
  gcc -g -O1 -fno-omit-frame-pointer -Wall -Wextra -Werror -Wl,--build-id "$@" \
    -I "$dir" -I "$dir/include" -I Sources/CCrashRecordLayout/include \
    Tests/DeathProbe/death_probe.c $(find "$dir" -name '*.c' | sort) Sources/CCrashRecordLayout/layout.c \
    -lz -lpthread -ldl -o "$bin"
}
build "$out/death-probe" CShims
echo "== built $out/death-probe (the core as it is)"

# run BIN SCENARIO MODE VARIANT: one run in $out/runs/<scenario>-<n> (same path length for
# every run, so the stack is laid out alike); sets status, final (the last delivered signal,
# pids normalised), pcsp (from the core, or "-"), records, overtake, late.
runs=0
run() {
  local bin=$1 scenario=$2 mode=$3 variant=$4
  runs=$((runs + 1))
  dir=$(printf '%s/runs/%s-%04d' "$out" "$scenario" "$runs")
  mkdir -p "$dir/rec" && cd "$dir"
  set +e
  if [ "$scenario" = wait-kill ]; then
    ( ulimit -c unlimited; env CC_EVAL_DEATH=$variant timeout -s KILL 30 setarch -R \
        strace -o trace -e trace=none "$bin" "$scenario" rec "$mode" >out 2>err; exit $? ) 2>/dev/null &
    local waiter=$!
    for _ in $(seq 100); do grep -q ready out 2>/dev/null && break; sleep 0.05; done
    local pid; pid=$(pgrep -f "^$bin $scenario rec $mode" | head -1)
    kill -SEGV "$pid"
    wait "$waiter"; status=$?
  else
    ( ulimit -c unlimited; env CC_EVAL_DEATH=$variant timeout -s KILL 30 setarch -R \
        strace -o trace -e trace=none "$bin" "$scenario" rec "$mode" >out 2>err; exit $? ) 2>/dev/null
    status=$?
  fi
  set -e
  sleep 0.2   # the overtake sender writes its verdict after sending
  final=$(grep -- '^---' trace | tail -1 | sed -E 's/si_pid=[0-9]+/si_pid=N/; s/^--- //; s/ ---$//')
  [ -n "$final" ] || final="(none)"
  tail -1 trace | grep -q '^+++ killed by' || final="$final, then $(tail -1 trace | sed 's/^+++ //; s/ +++$//')"
  pcsp="-"
  local core; core=$(ls core* 2>/dev/null | head -1 || true)
  if [ -n "$core" ] && [ -n "$readelf" ]; then
    pcsp=$("$readelf" --notes "$core" | grep -o 'rip: *0x[0-9a-f]*\|rsp: *0x[0-9a-f]*' | tr -d ' ' | head -2 | tr '\n' ' ')
    rm -f "$core"
  fi
  records=$(find rec -name '*.ccrec' | wc -l)
  overtake=$(cat overtake.txt 2>/dev/null || echo "-")
  late=$(grep -c 'late SIGPROF handler ran' err || true)
  cd "$root"
}

failures=0
fail() { echo "FAIL   $*"; failures=$((failures + 1)); }

echo "== each crash without and with capture: the same death"
for scenario in segv-maperr segv-accerr segv-gp bus-adrerr fpe-intdiv builtin-trap illegal breakpoint abort wait-kill; do
  run "$out/death-probe" "$scenario" without 0
  ref_status=$status ref_final=$final ref_pcsp=$pcsp
  run "$out/death-probe" "$scenario" capture 0
  if [ "$status" != "$ref_status" ]; then fail "$scenario: status $status with capture, $ref_status without"
  elif [ "$final" != "$ref_final" ]; then fail "$scenario: dies of {$final} with capture, {$ref_final} without"
  elif [ "$pcsp" != "$ref_pcsp" ]; then fail "$scenario: core pc/sp $pcsp with capture, $ref_pcsp without"
  elif [ "$records" -ne 1 ]; then fail "$scenario: $records records with capture"
  else echo "ok     $scenario: status $status, {$final}, core ${pcsp}"; fi
done

# expect SCENARIO STATUS FINAL-PREFIX: a scenario whose sender must act while the handler runs.
expect_timed() {
  local scenario=$1 want_status=$2 want_final=$3 bin=${4:-$out/death-probe} variant=${5:-0} quiet=${6:-}
  for attempt in 1 2 3 4 5; do
    run "$bin" "$scenario" capture "$variant"
    [ "$overtake" = "sent while the handler ran" ] && break
  done
  if [ -n "$quiet" ]; then
    printf '%-16s %-17s status %-3s {%s} late handler: %s (%s)\n' "$scenario" "$quiet" "$status" "$final" "$late" "$overtake"
    return
  fi
  if [ "$overtake" != "sent while the handler ran" ]; then
    fail "$scenario: the sender never acted while the handler ran ($overtake), 5 attempts"
  elif [ "$status" != "$want_status" ]; then fail "$scenario: status $status, expected $want_status {$final}"
  elif [[ "$final" != "$want_final"* ]]; then fail "$scenario: dies of {$final}, expected {$want_final...}"
  elif [ "$late" -ne 0 ]; then fail "$scenario: a handler of the program ran after the crash"
  else echo "ok     $scenario: status $status, {$final}, sent while the handler ran"; fi
}

echo "== signals and changes arriving while the handler runs"
expect_timed overtake 139 "SIGSEGV {si_signo=SIGSEGV, si_code=SEGV_MAPERR, si_addr=NULL}"
expect_timed overtake-thread 139 "SIGSEGV {si_signo=SIGSEGV, si_code=SEGV_MAPERR, si_addr=NULL}"
expect_timed bus-grown 135 "SIGBUS {si_signo=SIGBUS, si_code=BUS_ADRERR"

if [ -n "$harness" ]; then
  echo "== every harness scenario with Swift's backtracer on: with capture and without, the same death, as many reports, nothing left running"
  if ! "$harness" verify --backtracer; then fail "scenarios with Swift's backtracer on (above)"; fi
fi

if [ "$variants" = 1 ]; then
  echo "== the evaluated alternatives (docs/decisions/return-to-fault-eval.patch; reported, not judged)"
  rm -rf "$out/eval-core" && cp -r CShims "$out/eval-core"
  patch -s -p1 -d "$out/eval-core" --no-backup-if-mismatch <<<"$(sed 's#CShims/##g' docs/decisions/return-to-fault-eval.patch)"
  build "$out/death-probe-eval" "$out/eval-core" -DCC_EVAL_REFAULT=1
  for scenario in segv-maperr bus-adrerr fpe-intdiv illegal abort wait-kill; do
    for variant in 0 1 2; do
      name=(queue refault-unblock refault-blockall)
      run "$out/death-probe-eval" "$scenario" capture "$variant"
      printf '%-16s %-17s status %-3s {%s} core %s\n' "$scenario" "${name[$variant]}" "$status" "$final" "$pcsp"
    done
  done
  for scenario in overtake overtake-thread bus-grown; do
    for variant in 0 1 2; do
      name=(queue refault-unblock refault-blockall)
      expect_timed "$scenario" 0 "" "$out/death-probe-eval" "$variant" "${name[$variant]}"
    done
  done
fi

if [ "$failures" -ne 0 ]; then echo "death-check: $failures failed"; exit 1; fi
echo "death-check: all passed"
