/* cc_summary.c — a few lines on stderr when a crash's record could not be written whole (async-signal-safe). */
#include "cc_boot.h"
#include "cc_internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * A record the handler could not write whole — the directory is read-only, gone or full, a hard
 * RLIMIT_FSIZE, a failing disk — would otherwise leave no word anywhere that a crash happened
 * (or only a ".partial" file nobody looks at). So the handler then writes a short summary to
 * fd 2, where journald, `kubectl logs` and a terminal see it: every line starts with
 * "CrashCapture: ", at most 11 lines, one write(2):
 *
 *   CrashCapture: pid 4242 tid 4242 crashed: SIGSEGV (SEGV_MAPERR) at 0x0
 *   CrashCapture: record not written whole: writing it failed: ENOSPC: no space left on device (errno 28)
 *   CrashCapture: partial record: /var/lib/app/crashes/crash-1764000000000-4242-4242.ccrec.partial
 *   CrashCapture: #0 app+0x1a2b3
 *   CrashCapture: #1 app+0x1a2f0
 *   ...
 *
 * The frames are the crashed thread's, innermost first (frame 0 the faulting pc), named as the
 * record's readers name an address without a symbol (CrashRecord.offsetLabel(for:): the image's
 * file name and the offset from its base; cc__images_label), so a line here matches the same
 * frame of a complete record of the same crash; an address outside every image is "0x…". A whole
 * record adds nothing to stderr but the crash line below.
 *
 * Only pre-formatted pieces: constant strings, the names cc_names.c knows, numbers formatted into
 * a fixed buffer, paths prepared at install. fd 2 is written as it is at the crash; a program that
 * closed it without reopening it loses the summary, as it would lose its own last words.
 */

#define CC__SUMMARY_FRAMES 8

/* The text being assembled; what does not fit is dropped (the frames come last). */
typedef struct {
    char *out;
    size_t used, cap;
} cc__text_t;

/* async-signal-safe. */
static void cc__text_put(cc__text_t *t, const char *s, size_t len) {
    for (size_t i = 0; i < len && t->used < t->cap; i++) t->out[t->used++] = s[i];
}

/* async-signal-safe. */
static void cc__text_puts(cc__text_t *t, const char *s) { cc__text_put(t, s, cc__strnlen(s, CC__PATH_MAX)); }

/* async-signal-safe: decimal. */
static void cc__text_u64(cc__text_t *t, uint64_t value) {
    char digits[24];
    cc__text_put(t, digits, cc__fmt_u64(digits, value));
}

/* async-signal-safe: "0x" and lowercase hex without leading zeros, as Swift's String(_:radix: 16). */
static void cc__text_hex(cc__text_t *t, uint64_t value) {
    char digits[16];
    int count = 1;
    for (uint64_t rest = value >> 4; rest; rest >>= 4) count++;
    cc__text_puts(t, "0x");
    cc__text_put(t, digits, cc__fmt_hex(digits, value, count));
}

/* async-signal-safe: "SIGSEGV (SEGV_MAPERR) at 0x0", "SIGTERM (SI_USER) sent by pid 42". */
static void cc__text_crash(cc__text_t *t, const cc_sec_crash_t *crash) {
    const char *name = cc_signal_name(crash->signo);
    if (name) {
        cc__text_puts(t, name);
    } else {
        cc__text_puts(t, "signal ");
        cc__text_u64(t, (uint64_t)(uint32_t)crash->signo);
    }
    if (crash->code_name[0]) {
        cc__text_puts(t, " (");
        cc__text_put(t, crash->code_name, cc__strnlen(crash->code_name, sizeof crash->code_name));
        cc__text_puts(t, ")");
    }
    if (crash->flags & CC_CRASH_FAULT_ADDRESS) {
        cc__text_puts(t, " at ");
        cc__text_hex(t, crash->fault_address);
    }
    if (crash->flags & CC_CRASH_FROM_PROCESS) {
        cc__text_puts(t, " sent by pid ");
        cc__text_u64(t, (uint64_t)(uint32_t)crash->sender_pid);
    }
}

/* async-signal-safe: `image+0xoffset`, as the record's readers name an address without a symbol
 * (cc__images_label), or the bare address outside every image. */
static void cc__text_frame(cc__text_t *t, uint64_t address) {
    const char *image = 0;
    size_t image_length = 0;
    uint64_t offset = 0;
    if (cc__images_label(address, &image, &image_length, &offset)) {
        cc__text_put(t, image, image_length);
        cc__text_puts(t, "+");
        cc__text_hex(t, offset);
    } else {
        cc__text_hex(t, address);
    }
}

/* async-signal-safe: the record directory as a full path, without trailing '/': as configured
 * when that is absolute, else where its fd points (/proc/self/fd; " (deleted)" when it is gone). */
static void cc__text_directory(cc__text_t *t) {
    size_t length = cc__strnlen(cc__g.directory, sizeof cc__g.directory);
    const char *path = cc__g.directory;
    static char resolved[CC__PATH_MAX];
    if (length == 0 || path[0] != '/') {
        char link[48];
        size_t n = cc__strlcpy(link, "/proc/self/fd/", sizeof link);
        n += cc__fmt_u64(link + n, (uint64_t)(cc__g.dir_fd < 0 ? 0 : cc__g.dir_fd));
        link[n] = 0;
        ssize_t got = cc__g.dir_fd < 0 ? -1 : readlink(link, resolved, sizeof resolved);
        if (got > 0) { path = resolved; length = (size_t)got; }
    }
    while (length > 1 && path[length - 1] == '/') length--;
    cc__text_put(t, path, length);
}

/* async-signal-safe: writes the summary (see above) to fd 2. `w` is the record's writer after
 * its last step, w->failed set. */
void cc__summary_write(const cc_sec_crash_t *crash, pid_t pid, pid_t tid, const uint64_t *frames, uint32_t count,
                       const cc__writer_t *w) {
    static char buffer[2 * CC__PATH_MAX];
    cc__text_t t = { buffer, 0, sizeof buffer };
    static const char prefix[] = "CrashCapture: ";

    cc__text_puts(&t, prefix);
    cc__text_puts(&t, "pid ");
    cc__text_u64(&t, (uint64_t)(uint32_t)pid);
    cc__text_puts(&t, " tid ");
    cc__text_u64(&t, (uint64_t)(uint32_t)tid);
    cc__text_puts(&t, " crashed: ");
    cc__text_crash(&t, crash);
    cc__text_puts(&t, "\n");

    cc__text_puts(&t, prefix);
    cc__text_puts(&t, "record not written whole: ");
    cc__text_puts(&t, w->failed_step ? w->failed_step : CC__STEP_WRITE);
    cc__text_puts(&t, " failed: ");
    cc__text_puts(&t, cc__errno_name(w->error));
    cc__text_puts(&t, " (errno ");
    cc__text_u64(&t, (uint64_t)(uint32_t)w->error);
    cc__text_puts(&t, ")\n");

    cc__text_puts(&t, prefix);
    if (w->failed_step && cc__streq(w->failed_step, CC__STEP_CREATE)) {
        cc__text_puts(&t, "no record file could be created in ");
        cc__text_directory(&t);
    } else {
        cc__text_puts(&t, "partial record: ");
        cc__text_directory(&t);
        cc__text_puts(&t, "/");
        cc__text_puts(&t, cc__g.partial_name);
    }
    cc__text_puts(&t, "\n");

    for (uint32_t i = 0; i < count && i < CC__SUMMARY_FRAMES; i++) {
        cc__text_puts(&t, prefix);
        cc__text_puts(&t, "#");
        cc__text_u64(&t, i);
        cc__text_puts(&t, " ");
        cc__text_frame(&t, frames[i]);
        cc__text_puts(&t, "\n");
    }
    if (t.used == t.cap) t.out[t.cap - 1] = '\n';   /* cut short: still ends its last line */
    cc__write_all(2, buffer, t.used);
}

/*
 * THE CRASH LINE. At every crash (unless CC_FLAG_NO_CRASH_LINE), one line on fd 2 before the
 * record is written: a log pipeline (journald, `kubectl logs`) then learns of the crash, and of
 * the request it killed, even when the pod and its record directory are gone. One JSON object
 * after a fixed prefix, one write(2):
 *
 *   crashcapture: {"signal":"SIGSEGV","code":"SEGV_MAPERR","pid":4242,"tid":4250,"thread":"NIO-ELT-0-#1",
 *                  "record":"crash-1764000000000-4242-4250.ccrec","request_id":"8f3a…","trace_id":"4bf9…",
 *                  "span_id":"00f0…"}
 *
 * The request's fields are null when the crashed thread's request is not known. Only ids: no
 * path, query or key/values, which a data policy may keep from leaving the machine. Texts the
 * program gave (a request id from a header, a thread name) are escaped as JSON strings.
 */

/* async-signal-safe: `s` (at most `max` bytes) as a JSON string: quotes, backslash and control
 * characters escaped; bytes of 0x80 and up are copied (UTF-8 passes; the field is cut at a
 * character boundary by whoever filled it). */
static void cc__text_json_string(cc__text_t *t, const char *s, size_t max) {
    cc__text_puts(t, "\"");
    for (size_t i = 0; i < max && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char escaped[2] = { '\\', (char)c };
            cc__text_put(t, escaped, 2);
        } else if (c < 0x20 || c == 0x7F) {
            char escaped[6] = { '\\', 'u', '0', '0', 0, 0 };
            cc__fmt_hex(escaped + 4, c, 2);
            cc__text_put(t, escaped, 6);
        } else {
            cc__text_put(t, (const char *)&c, 1);
        }
    }
    cc__text_puts(t, "\"");
}

/* async-signal-safe: `bytes` as lowercase hex in a JSON string, or null when all are zero. */
static void cc__text_json_id(cc__text_t *t, const uint8_t *bytes, size_t count) {
    int any = 0;
    for (size_t i = 0; i < count; i++) any |= bytes[i];
    if (!any) { cc__text_puts(t, "null"); return; }
    cc__text_puts(t, "\"");
    for (size_t i = 0; i < count; i++) {
        char digits[2];
        cc__text_put(t, digits, cc__fmt_hex(digits, bytes[i], 2));
    }
    cc__text_puts(t, "\"");
}

void cc__crash_line_write(const cc_sec_crash_t *crash, pid_t pid, pid_t tid, const char *thread_name,
                          const char *record_name, const cc_sec_request_t *request) {
    if (cc__g.flags & CC_FLAG_NO_CRASH_LINE) return;
    /* Room for every field escaped at its longest: nothing is ever cut. */
    char line[2048];   /* on the stack, whose pages are in use already: a static's would fault in */
    cc__text_t t = { line, 0, sizeof line - 2 };
    cc__text_puts(&t, "crashcapture: {\"signal\":");
    cc__text_json_string(&t, crash->signal_name, sizeof crash->signal_name);
    cc__text_puts(&t, ",\"code\":");
    cc__text_json_string(&t, crash->code_name, sizeof crash->code_name);
    cc__text_puts(&t, ",\"pid\":");
    cc__text_u64(&t, (uint64_t)pid);
    cc__text_puts(&t, ",\"tid\":");
    cc__text_u64(&t, (uint64_t)tid);
    cc__text_puts(&t, ",\"thread\":");
    cc__text_json_string(&t, thread_name, 16);
    cc__text_puts(&t, ",\"record\":");
    cc__text_json_string(&t, record_name, CC__PATH_MAX);
    cc__text_puts(&t, ",\"request_id\":");
    if (request && request->request_id[0]) cc__text_json_string(&t, request->request_id, sizeof request->request_id);
    else cc__text_puts(&t, "null");
    cc__text_puts(&t, ",\"trace_id\":");
    if (request && (request->flags & CC_REQUEST_HAS_TRACE)) cc__text_json_id(&t, request->trace_id, sizeof request->trace_id);
    else cc__text_puts(&t, "null");
    cc__text_puts(&t, ",\"span_id\":");
    if (request && (request->flags & CC_REQUEST_HAS_TRACE)) cc__text_json_id(&t, request->span_id, sizeof request->span_id);
    else cc__text_puts(&t, "null");
    line[t.used++] = '}';
    line[t.used++] = '\n';
    cc__write_all(2, line, t.used);
}

/*
 * THE TERMINATION MESSAGE. Kubernetes keeps up to 4096 bytes of a file in the container
 * (terminationMessagePath, /dev/termination-log by default) when the container ends, and shows
 * it beside the exit code or OOMKilled in `kubectl describe pod`, the pod's status and its
 * events: with no backend, where a person looks first. When that file (CRASHCAPTURE_TERMINATION_LOG,
 * else /dev/termination-log; "" for none) exists and is a regular file we may write at install,
 * capture keeps it open and writes one message there — replacing what it held, never creating
 * the file — at a crash (here, from the handler) and at a hang record (cc_termination_message,
 * from the watcher), so that a later SIGKILL or OOM kill leaves the latest in the pod's status; a
 * normal exit takes a message of ours away again (a hang that recovered did not end the pod):
 *
 *   crashed: SIGSEGV (SEGV_MAPERR) at 0x0 in orders+0x1a2b3, thread 4250 "NIO-ELT-0-#1", while serving
 *   GET /orders/{id} (request 8f3a…, trace 4bf9…); record /var/lib/orders/crashes/crash-1764…-4242-4250.ccrec
 *
 * The frame is the first of the crashed thread in the main executable (the app's own code; no
 * symbol at a crash: `crash-inspect show` names it). As the crash line: the request's method,
 * route template and ids, never its path, query or key/values. Only the process that opened the
 * file writes it (a forked child that crashes does not).
 */
#define CC__TERMINATION_MAX 4096
#define CC__TERMINATION_DEFAULT "/dev/termination-log"

/* At a normal exit (exit(), main returning): a hang that was written there and recovered is no
 * reason the container ended. Only a message of ours, still as we left it, is taken away. */
static void cc__termination_at_exit(void) {
    struct stat st;
    int fd = cc__g.termination_fd - 1;
    if (cc__g.termination_fd <= 0 || cc__g.termination_length == 0 || getpid() != cc__g.termination_pid) return;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size == cc__g.termination_length && ftruncate(fd, 0) == 0) cc__g.termination_length = 0;
}

/* Install time (getenv, open, atexit: not async-signal-safe). */
void cc__termination_prepare(void) {
    if (cc__g.termination_fd > 0) return;   /* kept from an earlier install */
    const char *path = getenv("CRASHCAPTURE_TERMINATION_LOG");
    if (!path) path = CC__TERMINATION_DEFAULT;
    if (!path[0]) return;
    /* No O_CREAT: never made. O_NONBLOCK: a FIFO there must not stall start (it is refused below). */
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { close(fd); return; }
    cc__g.termination_pid = cc__sys_getpid();
    cc__g.termination_fd = fd + 1;
    static int registered;
    if (!registered) registered = atexit(cc__termination_at_exit) == 0;
}

void cc__termination_close(void) {
    if (cc__g.termination_fd > 0) close(cc__g.termination_fd - 1);
    cc__g.termination_fd = 0;
}

/* async-signal-safe: the file holds `text` alone. */
static int cc__termination_put(const char *text, size_t length) {
    if (cc__g.termination_fd <= 0 || cc__sys_getpid() != cc__g.termination_pid) return -1;
    int fd = cc__g.termination_fd - 1;
    if (length > CC__TERMINATION_MAX) length = CC__TERMINATION_MAX;
    if ((ssize_t)syscall(SYS_pwrite64, (long)fd, text, length, 0L) != (ssize_t)length) return -1;
    if ((int)syscall(SYS_ftruncate, (long)fd, (long)length) != 0) return -1;
    cc__g.termination_length = length;
    return 0;
}

int cc_termination_message(const char *text, size_t length) { return text ? cc__termination_put(text, length) : -1; }

/* async-signal-safe: the crash's message (see above), once the crashed thread is unwound. */
void cc__termination_crash(const cc_sec_crash_t *crash, pid_t tid, const char *thread_name, const cc_sec_request_t *request,
                           const uint64_t *frames, uint32_t count) {
    if (cc__g.termination_fd <= 0) return;
    char text[CC__TERMINATION_MAX];   /* on the stack, as the crash line's */
    cc__text_t t = { text, 0, sizeof text };
    cc__text_puts(&t, "crashed: ");
    cc__text_crash(&t, crash);
    /* The first frame in the main executable, else the innermost. */
    uint32_t at = count;
    for (uint32_t i = 0; i < count && at == count; i++) if (cc__images_in_main(frames[i] - (i > 0))) at = i;
    if (count > 0) {
        cc__text_puts(&t, " in ");
        cc__text_frame(&t, frames[at == count ? 0 : at]);
    }
    cc__text_puts(&t, ", thread ");
    cc__text_u64(&t, (uint64_t)(uint32_t)tid);
    if (thread_name[0]) { cc__text_puts(&t, " "); cc__text_json_string(&t, thread_name, 16); }
    if (request) {
        cc__text_puts(&t, ", while serving");
        if (request->method[0]) { cc__text_puts(&t, " "); cc__text_put(&t, request->method, cc__strnlen(request->method, sizeof request->method)); }
        if (request->route[0]) { cc__text_puts(&t, " "); cc__text_put(&t, request->route, cc__strnlen(request->route, sizeof request->route)); }
        if (!request->method[0] && !request->route[0]) cc__text_puts(&t, " a request");
        if (request->request_id[0] || (request->flags & CC_REQUEST_HAS_TRACE)) {
            cc__text_puts(&t, " (");
            if (request->request_id[0]) {
                cc__text_puts(&t, "request ");
                cc__text_put(&t, request->request_id, cc__strnlen(request->request_id, sizeof request->request_id));
            }
            if (request->flags & CC_REQUEST_HAS_TRACE) {
                if (request->request_id[0]) cc__text_puts(&t, ", ");
                cc__text_puts(&t, "trace ");
                for (size_t i = 0; i < sizeof request->trace_id; i++) {
                    char digits[2];
                    cc__text_put(&t, digits, cc__fmt_hex(digits, request->trace_id[i], 2));
                }
            }
            cc__text_puts(&t, ")");
        }
    }
    cc__text_puts(&t, "; record ");
    cc__text_directory(&t);
    cc__text_puts(&t, "/");
    cc__text_puts(&t, cc__g.file_name);
    cc__text_puts(&t, "\n");
    cc__termination_put(text, t.used);
}
