/* cc_sections.c — the record's sections that do not depend on how the record began: the process
 * and the run, the strings known since install, the compensating $AppEnd, memory windows (the pc,
 * the fault address, the stack, what the registers point at), the runtime's warnings, and the end.
 * Written by the crash handler (cc_handler.c) and by a live process's snapshot and hang records
 * (cc_snapshot.c) alike, so that both write one layout and neither calls into the other.
 * Everything here is async-signal-safe, under cc_handler.c's contract. */
#include "cc_internal.h"

#include <errno.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* async-signal-safe: the compensating $AppEnd, the template Swift rendered with its
 * placeholders filled (crashcapture.h, CC_TEMPLATE_*). No template, no section. */
void cc__write_app_end(cc__writer_t *w, int64_t crash_wall_ns, int64_t crash_mono_ns) {
    static char text[CC_TEMPLATE_MAX];
    if (!cc__published_copy(&cc__g.app_end, &cc__g.templates[0][0], CC_TEMPLATE_MAX, text)) return;
    char num[24];
    cc__section_begin(w, CC_SEC_APP_END);
    const char *run = text;
    for (const char *p = text; *p; p++) {
        if (*p != '\001') continue;
        cc__section_put(w, run, (size_t)(p - run));
        char code = p[1];
        if (code == 'T') {
            unsigned char id[16];
            char uuid[36];
            cc__random_bytes(id, sizeof id);
            id[6] = (unsigned char)((id[6] & 0x0F) | 0x40); /* RFC 4122 version 4 */
            id[8] = (unsigned char)((id[8] & 0x3F) | 0x80);
            size_t u = 0;
            for (int i = 0; i < 16; i++) {
                if (i == 4 || i == 6 || i == 8 || i == 10) uuid[u++] = '-';
                u += cc__fmt_hex(uuid + u, id[i], 2);
            }
            cc__section_puts(w, "\"");
            cc__section_put(w, uuid, u);
            cc__section_puts(w, "\"");
        } else if (code == 'M') {
            cc__section_put(w, num, cc__fmt_u64(num, (uint64_t)(crash_wall_ns / 1000000)));
        } else if (code == 'D') {
            int64_t elapsed_ms = (crash_mono_ns - cc__g.start_mono_ns) / 1000000;
            if (elapsed_ms < 0) elapsed_ms = 0;
            cc__section_put(w, num, cc__fmt_u64(num, (uint64_t)elapsed_ms / 1000));
            char frac[4] = { '.', (char)('0' + (elapsed_ms % 1000) / 100), (char)('0' + (elapsed_ms % 100) / 10),
                             (char)('0' + elapsed_ms % 10) };
            cc__section_put(w, frac, 4);
        }
        if (code) p++;    /* the letter is consumed; a 0x01 at the very end is dropped */
        run = p + 1;
    }
    cc__section_puts(w, run);
    cc__section_end(w);
}

/* The most bytes a window other than the stack's keeps: pc's 128, the fault address's 64, a
 * pointed-at object's 256. */
#define CC__WINDOW_MOST 256

/* async-signal-safe: a CC_SEC_MEMORY window, if any of it is readable; returns whether one was written. */
int cc__write_memory(cc__writer_t *w, const char *label, uint64_t address, size_t before, size_t after) {
    unsigned char bytes[CC__WINDOW_MOST];   /* on the stack: no page of its own to fault in */
    if (address < before) return 0;
    uint64_t start = address - before;
    size_t want = before + after;
    if (want > sizeof bytes) want = sizeof bytes;
    size_t got = cc__safe_read(start, bytes, want);
    if (got == 0) return 0;
    cc_sec_memory_t head = { .address = start };
    cc__strlcpy(head.label, label, sizeof head.label);
    cc__section_begin(w, CC_SEC_MEMORY);
    cc__section_put(w, &head, sizeof head);
    cc__section_put(w, bytes, got);
    cc__section_end(w);
    return 1;
}


/* async-signal-safe: reads the crashed thread's stack from sp up, as far as it is mapped (at most
 * CC__STACK_WINDOW bytes), once, into the window every later fault-proof read of it is served
 * from (cc__safe_window_read): the unwinder's, the pointed-memory windows', the stack's section.
 * A stack overflow leaves sp in the guard page below the stack: then the window starts at the
 * first readable 4 KiB boundary above sp (the smallest page size of both architectures), within
 * the same CC__STACK_WINDOW bytes from sp, so a debugger or a minidump made from the record still
 * has the frames that overflowed. */
void cc__read_stack_window(cc__stack_window_t *window, uint64_t sp) {
    window->length = 0;
    window->bytes = cc__safe_window_read(sp, CC__STACK_WINDOW, &window->length);
    window->start = sp;
    for (uint64_t next = (sp | 4095u) + 1; !window->length && next > sp && next - sp < CC__STACK_WINDOW; next += 4096) {
        window->bytes = cc__safe_window_read(next, CC__STACK_WINDOW - (size_t)(next - sp), &window->length);
        window->start = next;
    }
}

/* async-signal-safe: the stack window cc__read_stack_window read, as the "stack" CC_SEC_MEMORY. */
void cc__write_stack(cc__writer_t *w, const cc__stack_window_t *window) {
    if (!window->length) return;
    cc_sec_memory_t head = { .address = window->start };
    cc__strlcpy(head.label, "stack", sizeof head.label);
    cc__section_begin(w, CC_SEC_MEMORY);
    cc__section_put(w, &head, sizeof head);
    cc__section_put(w, window->bytes, window->length);
    cc__section_end(w);
}

/* The memory the crash was holding: a window around each value in a general register and in the
 * top words of the crashed thread's stack that points into readable memory the record does not
 * keep already (not near null, canonical, outside the stack window and the images), so that a
 * debugger on the exported minidump can print the heap object the crashing frame used. Each
 * window is CC__POINTED_BEFORE + CC__POINTED_AFTER bytes, at most CC__POINTED_WINDOWS of them
 * (12 KiB), labelled "*<register>" or "*sp+<offset>". */
#define CC__POINTED_WINDOWS     48
#define CC__POINTED_BEFORE      64
#define CC__POINTED_AFTER       192
#define CC__POINTED_STACK_WORDS 32
_Static_assert(CC__POINTED_BEFORE + CC__POINTED_AFTER <= CC__WINDOW_MOST, "a pointed-at window fits cc__write_memory's buffer");

/* async-signal-safe: whether `value` can be a user-space data pointer worth a window. */
static int cc__worth_a_window(uint64_t value, uint64_t sp) {
    if (value < 65536) return 0;                                      /* near null, or a small integer */
    if (value >= ((uint64_t)1 << 47)) return 0;                       /* not a canonical user address (both ABIs' 47/48 bits) */
    if (value + 4096 >= sp && value < sp + CC__STACK_WINDOW) return 0; /* the stack window keeps it */
    return !cc__images_contains(value);                               /* code and initialised data: the images have them (a .bss after an image's last file mapping is not in it, and gets a window) */
}

/* async-signal-safe (cc_internal.h) */
size_t cc__data_registers(const ucontext_t *uc, cc_register_t *out, size_t max) {
    unsigned char registers[sizeof(cc_sec_registers_t) + 48 * sizeof(cc_register_t)];   /* on the stack: no page to fault in */
    size_t length = cc__arch_registers(uc, registers, 0, sizeof registers);
    size_t all = length > sizeof(cc_sec_registers_t) ? (length - sizeof(cc_sec_registers_t)) / sizeof(cc_register_t) : 0;
    size_t count = 0;
    for (size_t i = 0; i < all && count < max; i++) {
        cc_register_t reg;
        __builtin_memcpy(&reg, registers + sizeof(cc_sec_registers_t) + i * sizeof reg, sizeof reg);
        /* The stack and program counters are kept already; flags and fault words are no pointers. */
        if (cc__streq(reg.name, "rsp") || cc__streq(reg.name, "sp") || cc__streq(reg.name, "rip") || cc__streq(reg.name, "pc") ||
            cc__streq(reg.name, "cr2") || cc__streq(reg.name, "eflags") || cc__streq(reg.name, "pstate")) continue;
        out[count++] = reg;
    }
    return count;
}

/* async-signal-safe: the windows of the memory the registers and the top of the stack point at
 * (see above), after the pc, stack and fault windows. */
void cc__write_pointed_memory(cc__writer_t *w, const ucontext_t *uc) {
    /* On the stack (≈ 1.4 KiB), whose pages are in use already: statics would each fault one in. */
    cc_register_t registers[48];
    uint64_t kept[CC__POINTED_WINDOWS];
    uint64_t words[CC__POINTED_STACK_WORDS];
    uint32_t count = 0;
    uint64_t sp = cc__context_sp(uc);
    size_t registers_count = cc__data_registers(uc, registers, 48);
    size_t stack_words = cc__safe_read(sp, words, sizeof words) / sizeof words[0];
    for (size_t i = 0; i < registers_count + stack_words && count < CC__POINTED_WINDOWS; i++) {
        char label[8] = "*";
        uint64_t value;
        if (i < registers_count) {
            cc__strlcpy(label + 1, registers[i].name, sizeof label - 1);
            value = registers[i].value;
        } else {
            size_t offset = (i - registers_count) * sizeof words[0];
            label[1] = 's'; label[2] = 'p'; label[3] = '+';
            label[4 + cc__fmt_u64(label + 4, (uint64_t)offset)] = 0;
            value = words[i - registers_count];
        }
        if (!cc__worth_a_window(value, sp)) continue;
        uint64_t start = (value - CC__POINTED_BEFORE) & ~(uint64_t)15;
        int seen = 0;
        for (uint32_t k = 0; k < count && !seen; k++) {
            seen = start < kept[k] + CC__POINTED_BEFORE + CC__POINTED_AFTER && kept[k] < start + CC__POINTED_BEFORE + CC__POINTED_AFTER;
        }
        if (seen) continue;
        if (cc__write_memory(w, label, start + CC__POINTED_BEFORE, CC__POINTED_BEFORE, CC__POINTED_AFTER)) kept[count++] = start;
    }
}

/* async-signal-safe: a NUL-terminated text another part of the process left at `address` (a
 * runtime's last words), at most `cap` bytes (and CC__MESSAGE_MAX), read fault-proof, as a
 * CC_SEC_STRING of `key` without its trailing newlines. Nothing when there is no text. */
void cc__write_message(cc__writer_t *w, uint32_t key, uint64_t address, size_t cap) {
    size_t got = cc__safe_read(address, cc__g.scratch, cap < CC__MESSAGE_MAX ? cap : CC__MESSAGE_MAX);
    size_t length = cc__strnlen(cc__g.scratch, got);
    while (length > 0 && cc__g.scratch[length - 1] == '\n') length--;
    if (length > 0) cc__write_string(w, key, cc__g.scratch, length);
}

/* async-signal-safe: "crash-<unix ms>-<pid>-<tid>" into cc__g.file_name / partial_name. */
/* async-signal-safe (cc_internal.h) */
void cc__name_record(int64_t wall_ns, pid_t pid, pid_t tid) {
    char *p = cc__g.file_name;
    const char *prefix = CC_RECORD_PREFIX;
    for (int i = 0; prefix[i]; i++) *p++ = prefix[i];
    p += cc__fmt_u64(p, (uint64_t)(wall_ns / 1000000));
    *p++ = '-';
    p += cc__fmt_u64(p, (uint64_t)pid);
    *p++ = '-';
    p += cc__fmt_u64(p, (uint64_t)tid);
    const char *ext = CC_RECORD_EXTENSION;
    for (int i = 0; ext[i]; i++) *p++ = ext[i];
    *p = 0;
    size_t n = cc__strlcpy(cc__g.partial_name, cc__g.file_name, sizeof cc__g.partial_name);
    n -= sizeof CC_RECORD_EXTENSION - 1;
    cc__strlcpy(cc__g.partial_name + n, CC_RECORD_PARTIAL_EXTENSION, sizeof cc__g.partial_name - n);
}

/* async-signal-safe: when a test hook had every thread's frames come from frame records
 * (cc_unwind.c), a note says so. */
void cc__write_unwind_note(cc__writer_t *w) {
    if (cc__g.unwind_note[0]) cc__write_string(w, CC_STR_NOTE, cc__g.unwind_note, cc__strnlen(cc__g.unwind_note, sizeof cc__g.unwind_note));
}

/* async-signal-safe: the strings known since install. */
void cc__write_app_strings(cc__writer_t *w) {
    cc__write_string(w, CC_STR_APP_NAME, cc__g.app_name, cc__strnlen(cc__g.app_name, sizeof cc__g.app_name));
    cc__write_string(w, CC_STR_APP_VERSION, cc__g.app_version, cc__strnlen(cc__g.app_version, sizeof cc__g.app_version));
    cc__write_string(w, CC_STR_EXECUTABLE_PATH, cc__g.executable_path, cc__strnlen(cc__g.executable_path, sizeof cc__g.executable_path));
    cc__write_string(w, CC_STR_KERNEL, cc__g.kernel, cc__strnlen(cc__g.kernel, sizeof cc__g.kernel));
}

/* async-signal-safe (cc_internal.h) */
void cc__write_install_strings(cc__writer_t *w) {
    cc__write_app_strings(w);
    cc__write_unwind_note(w);
}

/* async-signal-safe (cc_internal.h) */
void cc__write_process(cc__writer_t *w, cc_sec_process_t *process, pid_t pid, pid_t tid, int64_t wall_ns, int64_t mono_ns) {
    cc_sec_process_t p = {
        .pid = pid, .tid = tid, .ppid = cc__sys_getppid(), .uid = cc__sys_getuid(),
        .start_wall_ns = cc__g.start_wall_ns, .crash_wall_ns = wall_ns,
        .start_mono_ns = cc__g.start_mono_ns, .crash_mono_ns = mono_ns,
    };
    cc__sys_prctl(PR_GET_NAME, (unsigned long)p.thread_name);
    p.thread_name[15] = 0;
    cc__section_begin(w, CC_SEC_PROCESS);
    cc__section_put(w, &p, sizeof p);
    cc__section_end(w);
    *process = p;
}

/* async-signal-safe (cc_internal.h) */
void cc__write_run_and_scope(cc__writer_t *w) {
    if (cc__g.run_id[0]) cc__write_string(w, CC_STR_RUN_ID, cc__g.run_id, cc__strnlen(cc__g.run_id, sizeof cc__g.run_id));
    static char scope[CC_SCOPE_MAX];
    size_t scope_length = cc__published_copy(&cc__g.scope, &cc__g.scopes[0][0], CC_SCOPE_MAX, scope);
    if (scope_length) {
        cc__section_begin(w, CC_SEC_SCOPE);
        cc__section_put(w, scope, scope_length);
        cc__section_end(w);
    }
}

/* async-signal-safe (cc_internal.h) */
uint32_t cc__finish_record(cc__writer_t *w, int64_t began_mono_ns) {
    int64_t spent_us = (cc__clock_ns(CLOCK_MONOTONIC) - began_mono_ns) / 1000;
    cc_sec_end_t end = { .section_count = w->section_count,
                         .write_microseconds = spent_us > 0 && spent_us < UINT32_MAX ? (uint32_t)spent_us : 0 };
    cc__section_begin(w, CC_SEC_END);
    cc__section_put(w, &end, sizeof end);
    cc__section_end(w);
    cc__writer_flush(w);
    /* close(2) reports what a filesystem learns only then (NFS, a quota); EINTR still closed it. */
    if (w->fd >= 0 && cc__sys_close(w->fd) != 0 && errno != EINTR) cc__writer_fail(w, CC__STEP_CLOSE);
    w->fd = -1;
    if (!w->failed && cc__sys_renameat(cc__g.dir_fd, cc__g.partial_name, cc__g.dir_fd, cc__g.file_name) != 0) {
        cc__writer_fail(w, CC__STEP_RENAME);
    }
    return end.write_microseconds;
}

/* async-signal-safe: CC_STR_RUNTIME_WARNINGS, the runtime's reports in [text, text + end) that
 * are not a crash's message: the last CC__MESSAGE_MAX bytes, from the start of a line, and a note
 * saying how much was left out before them. */
void cc__write_runtime_warnings(cc__writer_t *w, uint64_t text, uint64_t end) {
    if (!text || end == 0) return;
    uint64_t start = end > CC__MESSAGE_MAX ? end - CC__MESSAGE_MAX : 0;
    size_t got = cc__safe_read(text + start, cc__g.scratch, (size_t)(end - start));
    size_t from = 0, length = cc__strnlen(cc__g.scratch, got);
    if (start > 0) {
        while (from < length && cc__g.scratch[from] != '\n') from++;
        from = from < length ? from + 1 : 0;   /* one line longer than the window: kept cut */
    }
    while (length > from && cc__g.scratch[length - 1] == '\n') length--;
    if (length <= from) return;
    cc__write_string(w, CC_STR_RUNTIME_WARNINGS, cc__g.scratch + from, length - from);
    if (start + from > 0) {
        char note[96];
        size_t n = cc__strlcpy(note, "runtime warnings: the first ", sizeof note);
        n += cc__fmt_u64(note + n, start + from);
        n += cc__strlcpy(note + n, " bytes were left out", sizeof note - n);
        cc__write_string(w, CC_STR_NOTE, note, n);
    }
}

/* async-signal-safe: where the runtime's text ends: as a look saw it, else looked for from what a
 * look saw, at most CC__RUNTIME_TEXT_SCAN bytes further. */
#define CC__RUNTIME_TEXT_SCAN (64 * CC__MESSAGE_MAX)
uint64_t cc__runtime_text_end(const cc__swift_reports_t *reports) {
    if (reports->length) return reports->length;
    uint64_t end = reports->earlier;
    while (end - reports->earlier < CC__RUNTIME_TEXT_SCAN) {
        size_t got = cc__safe_read(reports->text + end, cc__g.scratch, CC__MESSAGE_MAX);
        size_t length = cc__strnlen(cc__g.scratch, got);
        end += length;
        if (length < CC__MESSAGE_MAX) break;   /* its end, or unreadable from here */
    }
    return end;
}
