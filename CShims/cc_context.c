/* cc_context.c — the requests in flight: a lock-free table of request contexts, and which one the crashed thread was serving. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <link.h>
#include <sched.h>
#include <time.h>

/*
 * THE TABLE. A server attaches a fixed-size context (cc_sec_request_t: request id, method,
 * route, path, trace ids, a few key/values) when a request starts and detaches it when the
 * request ends. Each of the CC__CONTEXT_SLOTS slots has one atomic word, (generation << 2) |
 * state: FREE, WRITING or LIVE. Attaching claims a FREE slot with one compare-and-swap (probing
 * from a hash of the key, so concurrent requests rarely meet), copies the context in and
 * publishes it LIVE; detaching (by the handle attach returned, which names the slot and its
 * generation) makes it FREE again. No lock, no allocation: a request pays two atomic operations,
 * two clock reads and a copy of about a kilobyte. A full table refuses the attach (and counts
 * it): the request is served all the same, only not named in a record.
 *
 * WHICH REQUEST CRASHED. Not a thread-local of ours: after an `await` a task may resume on
 * another thread, so a thread's slot would name whichever request last ran there. The handler
 * asks what the Swift runtime itself knows, with plain reads:
 *   1. the crashed thread's current task: the runtime keeps it in a thread-local variable
 *      (swift_task_getCurrent reads it), which for a library loaded at start lies at a fixed
 *      distance from the thread pointer, the same for every thread;
 *   2. that task's task-local bindings: a linked list of items whose head is a word inside the
 *      task (TaskLocal::Storage), each value item { next | link bits, key, value type, value... }
 *      (include/swift/ABI/TaskLocal.h); an item that only links to a parent task's items has
 *      no key (6.3) or no value type (6.0). Swift's CrashContext binds the context's handle to its
 *      own TaskLocal for the request's duration; a child task (async let, a task group's child)
 *      links to its parent's items and an unstructured Task created inside the request copies
 *      them, so the walk finds the request from any of them — and the innermost binding first.
 * Neither place is public ABI, so both are found and checked at run time, in this process,
 * never assumed: the first CrashContext binding probes (cc_context_probe) from three different
 * tasks, looking for the words that equal the task (near the thread pointer) and for the word
 * of the task that leads to an item with our key and value; a place is KNOWN only when exactly
 * one candidate survives all three. After that every attach checks both places again
 * (cc_context_check: two loads); a single mismatch makes the layout FAILED for good. While the
 * layout is not KNOWN the record names no request crashed and says why in a note: a wrong
 * request is worse than none. A context attached to a thread (CC_REQUEST_THREAD) names the
 * crashed thread's request when no task's binding does.
 *
 * The probe and the checks are ordinary code; only cc__write_requests runs in the handler.
 */

#define CC__SLOT_FREE    0u
#define CC__SLOT_WRITING 1u
#define CC__SLOT_LIVE    2u
#define CC__HANDLE_MAGIC 0xCC00000000000000ull   /* top byte of every handle: a value that is hard to meet by chance */
#define CC__TLS_ABOVE    4096    /* bytes above the thread pointer searched for the current task (glibc's struct pthread, its first pthread keys) */
#define CC__TLS_RANGES   64      /* TLS blocks searched */
#define CC__TASK_WINDOW  1024    /* bytes of a task searched for its task-local head */
#define CC__ITEM_STEPS   64      /* task-local items followed at a crash */
#define CC__PROBE_TASKS  3       /* distinct tasks a place must be confirmed by */
#define CC__ITEM_LINK_BITS 7ull  /* the low bits of an item's next word say what it links to (two in Swift 6.0's runtime, three in 6.3's); items are 16-byte aligned */

static uint64_t cc__handle(uint32_t slot, uint64_t generation) {
    return CC__HANDLE_MAGIC | ((generation & 0xFFFFFFFFFFull) << 16) | slot;
}

/* async-signal-safe: the slot a handle names, or -1. */
static int cc__handle_slot(uint64_t handle) {
    if ((handle & 0xFF00000000000000ull) != CC__HANDLE_MAGIC) return -1;
    uint64_t slot = handle & 0xFFFF;
    return slot < CC__CONTEXT_SLOTS ? (int)slot : -1;
}

static uint64_t cc__handle_word(uint64_t handle) {
    return (((handle >> 16) & 0xFFFFFFFFFFull) << 2) | CC__SLOT_LIVE;
}

uint64_t cc_context_begin(uint64_t key, uint32_t flags, cc_sec_request_t **body) {
    if (flags & CC_REQUEST_THREAD) key = (uint64_t)cc__gettid();
    uint32_t start = (uint32_t)((key >> 4) ^ (key >> 12)) % CC__CONTEXT_SLOTS;
    for (uint32_t probe = 0; probe < CC__CONTEXT_SLOTS; probe++) {
        uint32_t index = (start + probe) % CC__CONTEXT_SLOTS;
        cc__context_slot_t *slot = &cc__g.contexts[index];
        uint64_t word = atomic_load_explicit(&slot->word, memory_order_relaxed);
        if ((word & 3) != CC__SLOT_FREE) continue;
        uint64_t generation = (word >> 2) + 1;
        if (!atomic_compare_exchange_strong_explicit(&slot->word, &word, (generation << 2) | CC__SLOT_WRITING,
                                                     memory_order_acquire, memory_order_relaxed)) {
            continue;
        }
        /* The texts must end in NUL within their fields: the slot starts from zero. */
        unsigned char *bytes = (unsigned char *)&slot->body;
        for (size_t i = 0; i < sizeof slot->body; i++) bytes[i] = 0;
        slot->body.key = key;
        slot->body.flags = flags & ~CC_REQUEST_CRASHED;
        slot->body.start_wall_ns = cc__clock_ns(CLOCK_REALTIME);
        slot->body.start_mono_ns = cc__clock_ns(CLOCK_MONOTONIC);
        /* A flag, not a count: only whether the program attaches contexts at all matters, and a
         * shared counter would bounce its cache line between the cores serving requests. */
        if (!atomic_load_explicit(&cc__g.contexts_attached, memory_order_relaxed)) {
            atomic_store_explicit(&cc__g.contexts_attached, 1, memory_order_relaxed);
        }
        *body = &slot->body;
        return cc__handle(index, generation);
    }
    atomic_fetch_add_explicit(&cc__g.contexts_dropped, 1, memory_order_relaxed);
    *body = 0;
    return 0;
}

void cc_context_commit(uint64_t handle) {
    int index = cc__handle_slot(handle);
    if (index < 0) return;
    uint64_t writing = (cc__handle_word(handle) & ~3ull) | CC__SLOT_WRITING;
    uint64_t live = cc__handle_word(handle);
    atomic_compare_exchange_strong_explicit(&cc__g.contexts[index].word, &writing, live, memory_order_release, memory_order_relaxed);
}

uint64_t cc_context_attach(const cc_sec_request_t *context) {
    cc_sec_request_t *body = 0;
    uint64_t handle = cc_context_begin(context->key, context->flags, &body);
    if (!handle) return 0;
    uint64_t key = body->key;
    int64_t wall = body->start_wall_ns, mono = body->start_mono_ns;
    *body = *context;
    body->key = key;
    body->flags &= ~CC_REQUEST_CRASHED;
    body->start_wall_ns = wall;
    body->start_mono_ns = mono;
    cc_context_commit(handle);
    return handle;
}

void cc_context_detach(uint64_t handle) {
    int index = cc__handle_slot(handle);
    if (index < 0) return;
    uint64_t live = cc__handle_word(handle);
    /* A context begun and never committed is freed too. */
    uint64_t writing = (live & ~3ull) | CC__SLOT_WRITING;
    if (atomic_compare_exchange_strong_explicit(&cc__g.contexts[index].word, &writing, live & ~3ull,
                                                memory_order_release, memory_order_relaxed)) {
        return;
    }
    /* Only the holder of a live handle frees its slot (a stale handle changes nothing). */
    atomic_compare_exchange_strong_explicit(&cc__g.contexts[index].word, &live, live & ~3ull,
                                            memory_order_release, memory_order_relaxed);
}

int cc_context_set_route(uint64_t handle, const char *route, size_t length) {
    int index = cc__handle_slot(handle);
    if (index < 0) return -1;
    cc__context_slot_t *slot = &cc__g.contexts[index];
    uint64_t live = cc__handle_word(handle);
    uint64_t writing = (live & ~3ull) | CC__SLOT_WRITING;
    if (!atomic_compare_exchange_strong_explicit(&slot->word, &live, writing, memory_order_acquire, memory_order_relaxed)) {
        return -1;
    }
    if (length >= CC_REQUEST_ROUTE_MAX) length = CC_REQUEST_ROUTE_MAX - 1;
    /* Cut at a UTF-8 character boundary. */
    while (length > 0 && length < CC_REQUEST_ROUTE_MAX - 1 && ((unsigned char)route[length] & 0xC0) == 0x80) length--;
    for (size_t i = 0; i < length; i++) slot->body.route[i] = route[i];
    for (size_t i = length; i < CC_REQUEST_ROUTE_MAX; i++) slot->body.route[i] = 0;
    atomic_store_explicit(&slot->word, cc__handle_word(handle), memory_order_release);
    return 0;
}

/* The layout stays unknown for good, with the reason a record's note gives. Ordinary code. */
static void cc__layout_fail(const char *why) {
    cc__strlcpy(cc__g.context_layout_note, why, sizeof cc__g.context_layout_note);
    atomic_store_explicit(&cc__g.context_layout, CC__LAYOUT_FAILED, memory_order_release);
}

typedef struct {
    uint32_t count;
    uint64_t start[CC__TLS_RANGES], end[CC__TLS_RANGES];
} cc__tls_ranges_t;

/* dl_iterate_phdr's callback (ordinary code): each module's TLS block for this thread. */
static int cc__collect_tls_range(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    cc__tls_ranges_t *ranges = data;
    if (!info->dlpi_tls_data || ranges->count >= CC__TLS_RANGES) return 0;
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
    head &= ~CC__ITEM_LINK_BITS;
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
        sched_yield();
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
        if (ranges.count < CC__TLS_RANGES) {
            ranges.start[ranges.count] = tp;
            ranges.end[ranges.count++] = tp + CC__TLS_ABOVE;
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
        uint64_t words[CC__TASK_WINDOW / 8];
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
            if (atomic_load(&cc__g.context_layout) != CC__LAYOUT_FAILED && cc__g.context_probe_count >= CC__PROBE_TASKS) {
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
    uint64_t head = *(const uint64_t *)(uintptr_t)(task + cc__g.context_local_offset) & ~CC__ITEM_LINK_BITS;
    const uint64_t *item = (const uint64_t *)(uintptr_t)head;
    if (!item || item[1] != key || item[3] != value) {
        cc__layout_fail("a check found another value where the Swift runtime's task-local bindings were");
        return CC__LAYOUT_FAILED;
    }
    return state;
}

int cc_context_layout(void) { return atomic_load_explicit(&cc__g.context_layout, memory_order_acquire); }

/* async-signal-safe: a copy of a live slot, 1 when whole (not torn by an attach or detach on a
 * thread that runs on while the record is written). */
static int cc__slot_copy(uint32_t index, cc_sec_request_t *out, uint64_t *word_out) {
    cc__context_slot_t *slot = &cc__g.contexts[index];
    uint64_t word = atomic_load_explicit(&slot->word, memory_order_acquire);
    if ((word & 3) != CC__SLOT_LIVE) return 0;
    *out = slot->body;
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&slot->word, memory_order_relaxed) != word) return 0;
    *word_out = word;
    return 1;
}

/* async-signal-safe: the handle bound to our key in `task`'s task-local items, or 0. */
static uint64_t cc__bound_handle(uint64_t task) {
    uint64_t head = 0;
    if (cc__safe_read(task + cc__g.context_local_offset, &head, 8) != 8) return 0;
    for (int step = 0; step < CC__ITEM_STEPS; step++) {
        head &= ~CC__ITEM_LINK_BITS;
        uint64_t item[4];
        if (head == 0 || cc__safe_read(head, item, sizeof item) != sizeof item) return 0;
        if (item[2] != 0 && item[1] == cc__g.context_key) return item[3];
        head = item[0];
    }
    return 0;
}

void cc__write_requests(cc__writer_t *w, pid_t tid, cc_sec_request_t *crashed, int *has_crashed, int live) {
    *has_crashed = 0;
    if (atomic_load_explicit(&cc__g.contexts_attached, memory_order_relaxed) == 0 &&
        atomic_load_explicit(&cc__g.contexts_dropped, memory_order_relaxed) == 0) {
        return;   /* the program attaches no contexts: nothing to say */
    }
    static cc_sec_request_t copy;
    cc_sec_requests_t head = { .dropped = atomic_load_explicit(&cc__g.contexts_dropped, memory_order_relaxed) };
    uint64_t crashed_handle = 0;
    int layout = atomic_load_explicit(&cc__g.context_layout, memory_order_acquire);
    if (live) {
        head.status = CC_REQUESTS_NO_TASK;   /* the writing thread serves no request */
    } else if (layout == CC__LAYOUT_KNOWN) {
        uint64_t current = 0;
        cc__safe_read(cc__arch_thread_pointer() + (uint64_t)cc__g.context_tls_offset, &current, 8);
        head.status = current ? CC_REQUESTS_TASK : CC_REQUESTS_NO_TASK;
        head.current_task = current;
        if (current) crashed_handle = cc__bound_handle(current);
    } else {
        head.status = CC_REQUESTS_UNKNOWN;
    }
    /* The crashed request: the task's binding, else the thread's own context. */
    int crashed_index = live ? -1 : cc__handle_slot(crashed_handle);
    uint64_t word = 0;
    if (crashed_index >= 0 && !(cc__slot_copy((uint32_t)crashed_index, crashed, &word) && word == cc__handle_word(crashed_handle))) {
        crashed_index = -1;
    }
    if (crashed_index < 0 && !live) {
        int64_t newest = 0;
        for (uint32_t i = 0; i < CC__CONTEXT_SLOTS; i++) {
            const cc_sec_request_t *body = &cc__g.contexts[i].body;
            if ((atomic_load_explicit(&cc__g.contexts[i].word, memory_order_acquire) & 3) != CC__SLOT_LIVE ||
                !(body->flags & CC_REQUEST_THREAD) || body->key != (uint64_t)tid) {
                continue;   /* a glance at two fields; only a candidate is copied (and checked) */
            }
            if (!cc__slot_copy(i, &copy, &word) || !(copy.flags & CC_REQUEST_THREAD) || copy.key != (uint64_t)tid) continue;
            if (crashed_index < 0 || copy.start_mono_ns > newest) {
                crashed_index = (int)i;
                newest = copy.start_mono_ns;
                *crashed = copy;
            }
        }
    }
    for (uint32_t i = 0; i < CC__CONTEXT_SLOTS; i++) {
        if ((atomic_load_explicit(&cc__g.contexts[i].word, memory_order_relaxed) & 3) == CC__SLOT_LIVE) head.in_flight++;
    }
    cc__section_begin(w, CC_SEC_REQUESTS);
    cc__section_put(w, &head, sizeof head);
    cc__section_end(w);
    if (head.status == CC_REQUESTS_UNKNOWN) {
        static char note[sizeof cc__g.context_layout_note + 96];
        size_t n = cc__strlcpy(note, "the crashed task's request could not be told: ", sizeof note);
        const char *why = layout == CC__LAYOUT_FAILED ? cc__g.context_layout_note
                                                      : "no request context had been bound in enough tasks to find where the runtime keeps them";
        cc__strlcpy(note + n, why, sizeof note - n);
        cc__write_string(w, CC_STR_NOTE, note, cc__strnlen(note, sizeof note));
    }
    if (crashed_index >= 0) {
        crashed->flags |= CC_REQUEST_CRASHED;
        *has_crashed = 1;
        cc__section_begin(w, CC_SEC_REQUEST);
        cc__section_put(w, crashed, sizeof *crashed);
        cc__section_end(w);
    }
    /* The others, most recent first (a live snapshot: oldest first): CC_REQUESTS_OTHERS_MAX
     * passes over the table, each taking the next one not yet written, ordered by (start, slot)
     * so that two started in the same nanosecond are both written (the table is small; nothing
     * to sort with). `sign` turns the order around: keys are compared as sign * (start, slot). */
    int64_t sign = live ? -1 : 1;
    int64_t below_start = INT64_MAX;
    int64_t below_slot = CC__CONTEXT_SLOTS;
    uint32_t links = CC__ASYNC_LINKS_CRASHED;   /* the suspended chains' budget, all requests together */
    for (uint32_t written = 0; written < CC_REQUESTS_OTHERS_MAX; written++) {
        int best = -1;
        int64_t best_start = INT64_MIN, best_slot = INT64_MIN;
        for (uint32_t i = 0; i < CC__CONTEXT_SLOTS; i++) {
            /* Only the start time is read here; the one chosen is copied whole (and checked) below. */
            if ((int)i == crashed_index || (atomic_load_explicit(&cc__g.contexts[i].word, memory_order_acquire) & 3) != CC__SLOT_LIVE) continue;
            int64_t start = cc__g.contexts[i].body.start_mono_ns;
            /* Within ±2^62 ns (146 years) of each other, so the negation cannot overflow. */
            int64_t key = sign * (start >> 1), slot = sign * (int64_t)i;
            int before = key < below_start || (key == below_start && slot < below_slot);
            if (before && (key > best_start || (key == best_start && slot > best_slot))) {
                best = (int)i;
                best_start = key;
                best_slot = slot;
            }
        }
        if (best < 0) break;
        below_start = best_start;
        below_slot = best_slot;
        if (!cc__slot_copy((uint32_t)best, &copy, &word)) continue;   /* changed meanwhile: left out */
        copy.flags &= ~CC_REQUEST_CRASHED;
        cc__section_begin(w, CC_SEC_REQUEST);
        cc__section_put(w, &copy, sizeof copy);
        cc__section_end(w);
        if (live && !(copy.flags & CC_REQUEST_THREAD)) cc__write_request_task(w, copy.key, &links);
    }
}

/* Not for a signal handler (plain reads of the table): the requests in flight for longer than
 * `age_ns`, and the oldest one's key and age. */
uint32_t cc_requests_older_than(int64_t age_ns, uint64_t *oldest_key, int64_t *oldest_age_ns) {
    int64_t now = cc__clock_ns(CLOCK_MONOTONIC);
    uint32_t count = 0;
    int64_t oldest = -1;
    uint64_t key = 0;
    for (uint32_t i = 0; i < CC__CONTEXT_SLOTS; i++) {
        if ((atomic_load_explicit(&cc__g.contexts[i].word, memory_order_acquire) & 3) != CC__SLOT_LIVE) continue;
        int64_t age = now - cc__g.contexts[i].body.start_mono_ns;
        if (age <= age_ns) continue;
        count++;
        if (age > oldest) { oldest = age; key = cc__g.contexts[i].body.key; }
    }
    if (oldest_key) *oldest_key = key;
    if (oldest_age_ns) *oldest_age_ns = oldest < 0 ? 0 : oldest;
    return count;
}
