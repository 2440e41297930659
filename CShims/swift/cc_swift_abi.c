/* cc_swift_abi.c — the Swift runtime's private layouts (cc_swift_abi.h says each assumption): the checks at install, the probe for the current task and its task-locals, and the readers of a task. */
#include "cc_boot.h"
#include "cc_internal.h"
#include "cc_swift_abi.h"

#include <dlfcn.h>
#include <link.h>
#include <sched.h>

/* Install time (cc_swift_abi.h, 1 and 3). dlsym is not async-signal-safe: what the handler needs
 * is resolved here, and the handler only loads it. */
void cc__swift_abi_prepare(void) {
    /* 1. The Swift runtime keeps the text of the last fatal error behind an exported accessor. */
    typedef const char *_Atomic *(*cc__fatal_buffer_fn)(void);
    cc__fatal_buffer_fn fatal_buffer = (cc__fatal_buffer_fn)dlsym(RTLD_DEFAULT, "swift_getFatalErrorMessageBuffer");
    cc__g.fatal_message_slot = fatal_buffer ? fatal_buffer() : 0;
    /* 1a. The images the runtime's fatal paths report from and the C library's abort is in. */
    cc__g.runtime_anchor = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "swift_reportError");
    cc__g.libc_anchor = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "abort");
    cc__swift_reports_look();   /* 1b. what the buffer holds before capture began */
    /* 3. Swift concurrency's debug exports (what lldb reads): the task metadata and the layout
     * version of its internal structures. Only version 1 is understood. */
    const void *const *task_metadata = (const void *const *)dlsym(RTLD_DEFAULT, "_swift_concurrency_debug_asyncTaskMetadata");
    const uint32_t *layout = (const uint32_t *)dlsym(RTLD_DEFAULT, "_swift_concurrency_debug_internal_layout_version");
    const size_t *task_size = (const size_t *)dlsym(RTLD_DEFAULT, "_swift_concurrency_debug_asyncTaskSize");
    int understood = task_metadata && layout && *layout == CC__SWIFT_TASK_LAYOUT_VERSION && task_size &&
                     *task_size >= CC__SWIFT_TASK_SIZE_MIN && *task_size <= CC__SWIFT_TASK_SIZE_MAX && !(*task_size & 7);
    cc__g.task_metadata = understood ? (uint64_t)(uintptr_t)*task_metadata : 0;
    cc__g.task_size = understood ? (uint64_t)*task_size : 0;
}

/* async-signal-safe (cc_swift_abi.h, 3): the nearest aligned word before the first context that
 * holds the task metadata. */
uint64_t cc__swift_task_of_context(uint64_t first_context) {
    static uint64_t window[CC__SWIFT_TASK_SCAN / 8];
    for (uint64_t span = CC__SWIFT_TASK_SCAN; span >= 256; span /= 2) {   /* smaller when the page before is unmapped */
        if (first_context < span || cc__safe_read(first_context - span, window, span) != span) continue;
        for (uint64_t i = span / 8; i-- > 0;) {
            uint64_t at = first_context - span + i * 8;
            if (!(at & (CC__SWIFT_TASK_ALIGN - 1)) && window[i] == cc__g.task_metadata) return at;
        }
        return 0;
    }
    return 0;
}

/* async-signal-safe (cc_swift_abi.h, 3): the task and its child fragment's parent in one read. */
int cc__swift_read_task(uint64_t task, cc__swift_task_t *out) {
    static uint64_t head[CC__SWIFT_TASK_HEADER_MAX / 8];
    size_t size = (size_t)cc__g.task_size + 8;   /* the task and its child fragment's parent */
    if (task == 0 || (task & (CC__SWIFT_TASK_ALIGN - 1)) || cc__safe_read(task, head, size) != size) return 0;
    uint64_t flags = head[CC__SWIFT_TASK_FLAGS_WORD];
    if (head[CC__SWIFT_TASK_METADATA_WORD] != cc__g.task_metadata || (flags & CC__SWIFT_JOB_KIND_MASK) != 0) return 0;
    out->flags = (uint32_t)flags;
    out->id = (uint32_t)(flags >> 32);
    out->resume = head[CC__SWIFT_TASK_RESUME_WORD];
    out->context = head[CC__SWIFT_TASK_CONTEXT_WORD];
    out->parent = (out->flags & CC_TASK_IS_CHILD) ? head[cc__g.task_size / 8] : 0;
    return 1;
}

/* async-signal-safe (cc_swift_abi.h, 4): a plain fault-proof read at the probed offset. */
uint64_t cc__swift_current_task(void) {
    uint64_t current = 0;
    cc__safe_read(cc__arch_thread_pointer() + (uint64_t)cc__g.context_tls_offset, &current, 8);
    return current;
}

/* async-signal-safe (cc_swift_abi.h, 5): the list from the probed head, at most
 * CC__SWIFT_ITEM_STEPS items. */
uint64_t cc__swift_task_local_value(uint64_t task) {
    uint64_t head = 0;
    if (cc__safe_read(task + cc__g.context_local_offset, &head, 8) != 8) return 0;
    for (int step = 0; step < CC__SWIFT_ITEM_STEPS; step++) {
        head &= ~CC__SWIFT_ITEM_LINK_BITS;
        uint64_t item[4];
        if (head == 0 || cc__safe_read(head, item, sizeof item) != sizeof item) return 0;
        if (item[2] != 0 && item[1] == cc__g.context_key) return item[3];
        head = item[0];
    }
    return 0;
}

/*
 * THE PROBE (cc_swift_abi.h, 4 and 5): ordinary code, never in the handler. The first
 * CrashContext binding offers its task (cc_context_probe, from inside CrashContext.withValue):
 * every word in the thread's TLS blocks (each loaded module's, which dl_iterate_phdr tells: the
 * thread's stack lies right below them and may hold the task too) and in glibc's thread
 * descriptor above the thread pointer (the first pthread keys' values) that equals the task is a
 * candidate for the current task; every word of the task that leads to an item with our key and
 * value is a candidate for the task-local head. Each later distinct task keeps the candidates it
 * confirms. The handler reads only the offsets found here.
 */

/* The layout stays unknown for good, with the reason a record's note gives. Ordinary code. */
static void cc__layout_fail(const char *why) {
    cc__strlcpy(cc__g.context_layout_note, why, sizeof cc__g.context_layout_note);
    atomic_store_explicit(&cc__g.context_layout, CC__LAYOUT_FAILED, memory_order_release);
}

typedef struct {
    uint32_t count;
    uint64_t start[CC__SWIFT_TLS_RANGES], end[CC__SWIFT_TLS_RANGES];
} cc__tls_ranges_t;

/* dl_iterate_phdr's callback (ordinary code): each module's TLS block for this thread. */
static int cc__collect_tls_range(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    cc__tls_ranges_t *ranges = data;
    if (!info->dlpi_tls_data || ranges->count >= CC__SWIFT_TLS_RANGES) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_TLS) continue;
        ranges->start[ranges->count] = (uint64_t)(uintptr_t)info->dlpi_tls_data;
        ranges->end[ranges->count++] = (uint64_t)(uintptr_t)info->dlpi_tls_data + info->dlpi_phdr[i].p_memsz;
        break;
    }
    return 0;
}

/* Whether the word at `at` starts a task-local item bound to `key` with `value`: { next, key,
 * value type (non-zero for a value item), the value (an 8-byte value sits right after) }. */
static int cc__is_item(uint64_t head, uint64_t key, uint64_t value) {
    uint64_t item[4];
    head &= ~CC__SWIFT_ITEM_LINK_BITS;
    if (head == 0 || cc__safe_read(head, item, sizeof item) != sizeof item) return 0;
    return item[1] == key && item[2] != 0 && item[3] == value;
}

int cc_context_probe(uint64_t task, uint64_t key, uint64_t value) {
    int state = atomic_load_explicit(&cc__g.context_layout, memory_order_acquire);
    if (state == CC__LAYOUT_KNOWN || state == CC__LAYOUT_FAILED || task == 0) return state;
    /* One probe at a time; another thread's takes microseconds (a few syscalls), so wait. */
    for (int spins = 0;; spins++) {
        int idle = 0;
        if (atomic_compare_exchange_strong(&cc__g.context_probe_busy, &idle, 1)) break;
        if (spins == 100000) return state;
        cc__sys_sched_yield();
    }
    uint64_t tp = cc__arch_thread_pointer();
    if (cc__g.flags & CC_FLAG_TEST_UNKNOWN_TASK_LAYOUT) {
        cc__layout_fail("test hook: the runtime's task layout is treated as unknown");
    } else if (cc__g.context_probe_count == 0) {
        /* First probe: every candidate, in the thread's TLS blocks (each loaded module's, which
         * dl_iterate_phdr tells: the thread's stack lies right below them and may hold the task
         * too) and in glibc's thread descriptor above the thread pointer (the first pthread keys'
         * values). */
        cc__g.context_key = key;
        cc__tls_ranges_t ranges = { .count = 0 };
        /* Ordinary code: the probe runs in a task inside CrashContext.withValue, never in the
         * handler (which reads only the offsets found here). */
        dl_iterate_phdr(cc__collect_tls_range, &ranges);
        if (ranges.count < CC__SWIFT_TLS_RANGES) {
            ranges.start[ranges.count] = tp;
            ranges.end[ranges.count++] = tp + CC__SWIFT_TLS_ABOVE;
        }
        static uint64_t window[4096 / 8];
        for (uint32_t r = 0; r < ranges.count; r++) {
            for (uint64_t at = ranges.start[r] & ~7ull; at < ranges.end[r] && cc__g.context_tls_count < CC__PROBE_CANDIDATES; at += sizeof window) {
                size_t want = ranges.end[r] - at < sizeof window ? (size_t)(ranges.end[r] - at) & ~7ul : sizeof window;
                size_t got = cc__safe_read(at, window, want);
                for (size_t i = 0; i < got / 8 && cc__g.context_tls_count < CC__PROBE_CANDIDATES; i++) {
                    if (window[i] == task) cc__g.context_tls[cc__g.context_tls_count++] = (int64_t)(at + i * 8 - tp);
                }
            }
        }
        uint64_t words[CC__SWIFT_TASK_WINDOW / 8];
        size_t got = cc__safe_read(task, words, sizeof words);
        for (size_t i = 0; i < got / 8 && cc__g.context_local_count < CC__PROBE_CANDIDATES; i++) {
            if (cc__is_item(words[i], key, value)) cc__g.context_local[cc__g.context_local_count++] = i * 8;
        }
        if (cc__g.context_tls_count == 0) {
            cc__layout_fail("the Swift runtime's current task was not found beside the thread pointer");
        } else if (cc__g.context_local_count == 0) {
            cc__layout_fail("the Swift runtime's task-local bindings were not found in the task");
        } else {
            cc__g.context_probed[cc__g.context_probe_count++] = task;
        }
    } else if (key != cc__g.context_key) {
        cc__layout_fail("a second task-local key was probed");
    } else {
        int seen = 0;
        for (uint32_t i = 0; i < cc__g.context_probe_count; i++) seen |= cc__g.context_probed[i] == task;
        if (!seen) {
            /* Keep the candidates this task confirms. */
            uint32_t kept = 0;
            for (uint32_t i = 0; i < cc__g.context_tls_count; i++) {
                uint64_t word = 0;
                if (cc__safe_read(tp + (uint64_t)cc__g.context_tls[i], &word, 8) == 8 && word == task) {
                    cc__g.context_tls[kept++] = cc__g.context_tls[i];
                }
            }
            cc__g.context_tls_count = kept;
            kept = 0;
            for (uint32_t i = 0; i < cc__g.context_local_count; i++) {
                uint64_t head = 0;
                if (cc__safe_read(task + cc__g.context_local[i], &head, 8) == 8 && cc__is_item(head, key, value)) {
                    cc__g.context_local[kept++] = cc__g.context_local[i];
                }
            }
            cc__g.context_local_count = kept;
            if (cc__g.context_tls_count == 0) {
                cc__layout_fail("the Swift runtime's current task was not where an earlier task had it");
            } else if (cc__g.context_local_count == 0) {
                cc__layout_fail("the Swift runtime's task-local bindings were not where an earlier task had them");
            } else if (cc__g.context_probe_count < CC__PROBE_TASKS_MAX) {
                cc__g.context_probed[cc__g.context_probe_count++] = task;
            }
            if (atomic_load(&cc__g.context_layout) != CC__LAYOUT_FAILED && cc__g.context_probe_count >= CC__SWIFT_PROBE_TASKS) {
                if (cc__g.context_tls_count == 1 && cc__g.context_local_count == 1) {
                    cc__g.context_tls_offset = cc__g.context_tls[0];
                    cc__g.context_local_offset = cc__g.context_local[0];
                    atomic_store_explicit(&cc__g.context_layout, CC__LAYOUT_KNOWN, memory_order_release);
                } else if (cc__g.context_probe_count >= CC__PROBE_TASKS_MAX) {
                    cc__layout_fail("the Swift runtime's current task or task-local bindings matched more than one place");
                }
            }
        }
    }
    state = atomic_load_explicit(&cc__g.context_layout, memory_order_acquire);
    if (state == CC__LAYOUT_NONE && cc__g.context_probe_count > 0) {
        int none = CC__LAYOUT_NONE;
        atomic_compare_exchange_strong(&cc__g.context_layout, &none, CC__LAYOUT_PROBING);
        state = atomic_load_explicit(&cc__g.context_layout, memory_order_acquire);
    }
    atomic_store(&cc__g.context_probe_busy, 0);
    return state;
}

int cc_context_check(uint64_t task, uint64_t key, uint64_t value) {
    int state = atomic_load_explicit(&cc__g.context_layout, memory_order_acquire);
    if (state != CC__LAYOUT_KNOWN) return state;
    /* Plain loads: the thread's own static TLS and the running task, both mapped. */
    uint64_t current = *(const uint64_t *)(uintptr_t)(cc__arch_thread_pointer() + (uint64_t)cc__g.context_tls_offset);
    if (current != task) {
        cc__layout_fail("a check found another value where the Swift runtime's current task was");
        return CC__LAYOUT_FAILED;
    }
    uint64_t head = *(const uint64_t *)(uintptr_t)(task + cc__g.context_local_offset) & ~CC__SWIFT_ITEM_LINK_BITS;
    const uint64_t *item = (const uint64_t *)(uintptr_t)head;
    if (!item || item[1] != key || item[3] != value) {
        cc__layout_fail("a check found another value where the Swift runtime's task-local bindings were");
        return CC__LAYOUT_FAILED;
    }
    return state;
}

int cc_context_layout(void) { return atomic_load_explicit(&cc__g.context_layout, memory_order_acquire); }

/* 1b. The looks kept: three slots, the newest at g_looks.seq % 3 and the one before it behind
 * it; a look fills the slot after the newest, then publishes it by bumping seq, so the two a
 * crash reads are never the one being filled. One look at a time (busy); another skips. */
typedef struct {
    uint64_t text;                     /* the buffer's pointer then */
    uint64_t length;                   /* its text's length */
    int64_t seen_ns;                   /* CLOCK_MONOTONIC when first seen */
    uint32_t tail_length;
    char tail[CC__SWIFT_REPORTS_TAIL]; /* its last bytes */
} cc__swift_look_t;
static struct {
    _Atomic uint64_t seq;
    _Atomic uint64_t last_text;        /* the pointer the newest look saw */
    atomic_flag busy;
    cc__swift_look_t slots[3];
} g_looks = { .busy = ATOMIC_FLAG_INIT };

/* Ordinary code and async-signal-safe, lock-free (cc_swift_abi.h, 1b). The text is the
 * runtime's own, published whole before its pointer and never freed: read as the runtime's
 * next report reads it. */
void cc__swift_reports_look(void) {
    const char *_Atomic *slot = cc__g.fatal_message_slot;
    if (!slot) return;
    const char *text = atomic_load_explicit(slot, memory_order_acquire);
    if ((uint64_t)(uintptr_t)text == atomic_load_explicit(&g_looks.last_text, memory_order_relaxed)) return;
    if (atomic_flag_test_and_set_explicit(&g_looks.busy, memory_order_acquire)) return;
    text = atomic_load_explicit(slot, memory_order_acquire);
    uint64_t seq = atomic_load_explicit(&g_looks.seq, memory_order_relaxed);
    cc__swift_look_t *look = &g_looks.slots[(seq + 1) % 3];
    uint64_t length = 0;
    if (text) while (text[length]) length++;
    look->text = (uint64_t)(uintptr_t)text;
    look->length = length;
    look->seen_ns = cc__clock_ns(CLOCK_MONOTONIC);
    look->tail_length = (uint32_t)(length < CC__SWIFT_REPORTS_TAIL ? length : CC__SWIFT_REPORTS_TAIL);
    for (uint32_t i = 0; i < look->tail_length; i++) look->tail[i] = text[length - look->tail_length + i];
    atomic_store_explicit(&g_looks.seq, seq + 1, memory_order_release);
    atomic_store_explicit(&g_looks.last_text, (uint64_t)(uintptr_t)text, memory_order_relaxed);
    atomic_flag_clear_explicit(&g_looks.busy, memory_order_release);
}

void cc_note_runtime_reports(void) { cc__swift_reports_look(); }

/* async-signal-safe: whether `look` describes the start of the current `text`: the same last
 * bytes at the same length. */
static int cc__swift_look_holds(const cc__swift_look_t *look, uint64_t text) {
    static char tail[CC__SWIFT_REPORTS_TAIL];
    if (look->length == 0) return 1;
    if (look->text == text) return 1;
    uint64_t from = text + look->length - look->tail_length;
    if (cc__safe_read(from, tail, look->tail_length) != look->tail_length) return 0;
    for (uint32_t i = 0; i < look->tail_length; i++) if (tail[i] != look->tail[i]) return 0;
    return 1;
}

/* async-signal-safe (cc_swift_abi.h, 1b). At a crash the other threads are stopped by now; a look
 * still running in one of them has not published, and the two slots read are not the one it fills. */
int cc__swift_reports_read(int64_t entry_ns, cc__swift_reports_t *out) {
    static cc__swift_look_t looks[2];
    out->text = 0;
    out->earlier = 0;
    out->length = 0;
    if (!cc__g.fatal_message_slot) return 0;
    out->text = (uint64_t)(uintptr_t)atomic_load(cc__g.fatal_message_slot);
    if (!out->text) return 0;
    /* A snapshot's process runs on: a look published twice meanwhile could refill a slot being
     * copied, so the copy is taken again then (at most a few times). */
    for (int tries = 0; tries < 4; tries++) {
        uint64_t seq = atomic_load_explicit(&g_looks.seq, memory_order_acquire);
        looks[0] = g_looks.slots[seq % 3];
        looks[1] = g_looks.slots[(seq + 2) % 3];
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&g_looks.seq, memory_order_relaxed) == seq) break;
    }
    for (int i = 0; i < 2 && !out->length; i++) if (looks[i].text == out->text) out->length = looks[i].length;
    for (int i = 0; i < 2; i++) {
        if (looks[i].text == 0) continue;                   /* no look yet, or it saw no text */
        if (entry_ns - looks[i].seen_ns < CC__SWIFT_REPORTS_SETTLE_NS) continue;
        if (cc__swift_look_holds(&looks[i], out->text)) out->earlier = looks[i].length;
        return 1;
    }
    return 1;
}

/* async-signal-safe: whether `address` lies in the collected image that holds `anchor`. */
static int cc__same_image(uint64_t address, uint64_t anchor) {
    uint64_t base, end, bias, phdr, eh_frame_hdr;
    uint16_t phnum;
    return anchor && cc__images_find(anchor, &base, &end, &bias, &phdr, &phnum, &eh_frame_hdr) && address >= base &&
           address < end;
}

/* async-signal-safe (cc_swift_abi.h, 1a). */
int cc__swift_fatal_path(int signo, const siginfo_t *info, pid_t pid, uint64_t pc, const uint64_t *frames,
                         uint32_t count) {
    if (!info || !cc__g.runtime_anchor) return 0;
    if (signo == SIGILL || signo == SIGTRAP) return info->si_code > 0 && cc__same_image(pc, cc__g.runtime_anchor);
    if (signo != SIGABRT || info->si_code > 0 || info->si_pid != pid) return 0;
    if (cc__same_image(cc__g.runtime_anchor, cc__g.libc_anchor)) return 1;   /* one image: (b) decides */
    for (uint32_t i = 0; i < count; i++) {
        uint64_t at = frames[i] - (i > 0);   /* a return address: its call is the byte before */
        if (cc__same_image(at, cc__g.libc_anchor)) continue;
        return cc__same_image(at, cc__g.runtime_anchor);
    }
    return 0;
}
