#!/usr/bin/env python3
"""crash-timeline: where a one-thread crash's time goes, segment by segment, with CrashCapture
and without it, in one interleaved run.

    swift build -c release --product crash-target
    python3 Benchmarks/crash-timeline.py [.build/release/crash-target] [runs] [another build's crash-target]

With a third argument, that build's CrashCapture runs as a third configuration, interleaved with
the other two: a change's before and after in one run.

crash-target (Benchmarks/InPackage) writes the CLOCK_MONOTONIC time just before it crashes
("mark N" on stderr, CRASH_TARGET_MARK); the record has when capture started, when the handler
began and how long it took to the end section; this script has when it spawned the child and,
through a pidfd, when the child was gone. CLOCK_MONOTONIC is the machine's, so the segments
line up. Medians over `runs` rounds of (no handler, CrashCapture), the order rotating each round,
after three warm-up rounds; the
last line is the whole process's difference as the median of the per-round differences.
"""
import glob, os, select, statistics, struct, sys, time

target = sys.argv[1] if len(sys.argv) > 1 else ".build/release/crash-target"
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 60
before = sys.argv[3] if len(sys.argv) > 3 else None
records = "/tmp/crash-timeline-%d" % os.getpid()
os.makedirs(records, exist_ok=True)
env = dict(os.environ, SWIFT_BACKTRACE="enable=no", CRASH_TARGET_MARK="1")


def record_clocks(path):
    """(start_mono_ns, crash_mono_ns, write_microseconds) from a record's PROCESS and END sections."""
    data = open(path, "rb").read()
    at, start, crash, micros = 32, None, None, None
    while at + 8 <= len(data):
        kind, length = struct.unpack_from("<II", data, at)
        body = data[at + 8: at + 8 + length]
        if kind == 2 and length >= 48:   # CC_SEC_PROCESS: start_mono_ns, crash_mono_ns at 32
            start, crash = struct.unpack_from("<qq", body, 32)
        if kind == 10 and length >= 8:   # CC_SEC_END: write_microseconds at 4
            micros = struct.unpack_from("<I", body, 4)[0]
        at += 8 + length + 4
    return start, crash, micros


def run(mode, target=target):
    for old in glob.glob(records + "/*"):
        os.unlink(old)
    read_end, write_end = os.pipe()
    actions = [(os.POSIX_SPAWN_DUP2, write_end, 2), (os.POSIX_SPAWN_CLOSE, read_end)]
    spawned = time.monotonic_ns()
    pid = os.posix_spawn(target, [target, mode, records], env, file_actions=actions)
    os.close(write_end)
    pidfd = os.pidfd_open(pid)
    poll = select.poll()
    poll.register(pidfd, select.POLLIN)
    poll.poll()
    gone = time.monotonic_ns()
    os.waitpid(pid, 0)
    os.close(pidfd)
    stderr = b""
    while chunk := os.read(read_end, 65536):
        stderr += chunk
    os.close(read_end)
    mark = next(int(line.split()[1]) for line in stderr.decode(errors="replace").splitlines() if line.startswith("mark "))
    if mode == "none":
        return {"spawn → crash": mark - spawned, "crash → gone": gone - mark, "whole": gone - spawned}
    start, crash, micros = record_clocks(glob.glob(records + "/*.ccrec")[0])
    end = crash + micros * 1000
    return {"spawn → crash": mark - spawned, "  of which capture's start (install on)": mark - start,
            "crash → gone": gone - mark, "  fault → handler": crash - mark, "  handler (to the end section)": end - crash,
            "  end section → gone": gone - end, "whole": gone - spawned}


rows = {"none": [], "capture": [], "before": []}
# The order rotates each round: a configuration that always ran right after one that left a
# record (deleted before the next run) would always create its own file in a directory that
# just lost one, and always pay for it.
modes = ("none", "capture", "before") if before else ("none", "capture")
for round in range(runs + 3):
    for mode in modes[round % len(modes):] + modes[:round % len(modes)]:
        result = run("capture", before) if mode == "before" else run(mode)
        if round >= 3:
            rows[mode].append(result)
for old in glob.glob(records + "/*"):
    os.unlink(old)
os.rmdir(records)
median = lambda mode, key: statistics.median(r[key] for r in rows[mode]) / 1000
print("crash-timeline: %d interleaved rounds, medians in µs (%s)" % (runs, target))
print("%-42s %10s %12s %8s%s" % ("segment", "no handler", "CrashCapture", "added", "   before   added" if before else ""))
for key in rows["capture"][0]:
    a = median("none", key) if key in rows["none"][0] else None
    cells = []
    for mode in ("capture", "before") if before else ("capture",):
        c = median(mode, key)
        cells.append("%12.0f %8s" % (c, "%+.0f" % (c - a) if a is not None else ""))
    print("%-42s %10s %s" % (key, "%.0f" % a if a is not None else "", " ".join(cells)))
# The whole process's difference as the median of the per-round differences (each round runs the
# configurations back to back, so a slow moment of the machine weighs on both): steadier than the
# difference of the medians above.
def paired(mode):
    d = sorted((c["whole"] - n["whole"]) / 1000 for c, n in zip(rows[mode], rows["none"]))
    return "%+.0f (p25…p75 %+.0f…%+.0f)" % (statistics.median(d), d[len(d) // 4], d[3 * len(d) // 4])
print("whole, added: median of per-round differences  %s%s" % (paired("capture"), "   before %s" % paired("before") if before else ""))
