/* cc_context.c — the requests in flight: a lock-free table of request contexts, and which one the crashed thread was serving. */
#include "cc_boot.h"
#include "cc_internal.h"
#include "cc_swift_abi.h"

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
 * asks what the Swift runtime itself knows, with plain reads: the crashed thread's current task
 * (cc__swift_current_task), then the handle CrashContext bound in that task's task-local
 * bindings (cc__swift_task_local_value), which a child task (async let, a task group's child)
 * links to and an unstructured Task created inside the request copies, so the request is found
 * from any of them — and the innermost binding first. Neither place is public ABI: both are
 * found and checked at run time by the probe (cc_context_probe, cc_context_check), and
 * cc_swift_abi.h says what is assumed, how it is checked and what a failed check means. While
 * the layout is not KNOWN the record names no request crashed and says why in a note: a wrong
 * request is worse than none. A context attached to a thread (CC_REQUEST_THREAD) names the
 * crashed thread's request when no task's binding does.
 *
 * Only cc__write_requests runs in the handler.
 */

#define CC__SLOT_FREE    0u
#define CC__SLOT_WRITING 1u
#define CC__SLOT_LIVE    2u
#define CC__HANDLE_MAGIC 0xCC00000000000000ull   /* top byte of every handle: a value that is hard to meet by chance */

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
        cc__swift_reports_look();   /* cc_swift_abi.h, 1b: a server looks once per request */
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
        uint64_t current = cc__swift_current_task();
        head.status = current ? CC_REQUESTS_TASK : CC_REQUESTS_NO_TASK;
        head.current_task = current;
        if (current) crashed_handle = cc__swift_task_local_value(current);
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
