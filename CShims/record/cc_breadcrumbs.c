/* cc_breadcrumbs.c — the lock-free breadcrumb ring: any thread writes, the handler copies the last slots. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <time.h>

/* async-signal-safe and lock-free: claims the next slot with fetch_add and publishes it with a
 * sequence number (odd while being written, 2*index+2 once whole). A writer lapped by another
 * on the same slot only makes the reader skip that slot. */
void cc_breadcrumb(uint32_t level, const char *message, size_t length) {
    uint64_t index = atomic_fetch_add_explicit(&cc__g.breadcrumb_head, 1, memory_order_relaxed);
    cc__breadcrumb_slot_t *slot = &cc__g.breadcrumbs[index % CC__BREADCRUMB_SLOTS];
    atomic_store_explicit(&slot->seq, index * 2 + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    if (length > CC__BREADCRUMB_TEXT) length = CC__BREADCRUMB_TEXT;
    for (size_t i = 0; i < length; i++) slot->text[i] = message[i];
    slot->length = (uint32_t)length;
    slot->level = level;
    slot->wall_ns = cc__clock_ns(CLOCK_REALTIME);
    atomic_store_explicit(&slot->seq, index * 2 + 2, memory_order_release);
    cc__swift_reports_look();   /* cc_swift_abi.h, 1b */
}

/* async-signal-safe: one CC_SEC_BREADCRUMB per whole slot, oldest first. */
void cc__write_breadcrumbs(cc__writer_t *w) {
    static char text[CC__BREADCRUMB_TEXT];
    uint64_t head = atomic_load_explicit(&cc__g.breadcrumb_head, memory_order_acquire);
    uint64_t first = head > CC__BREADCRUMB_SLOTS ? head - CC__BREADCRUMB_SLOTS : 0;
    for (uint64_t index = first; index < head; index++) {
        cc__breadcrumb_slot_t *slot = &cc__g.breadcrumbs[index % CC__BREADCRUMB_SLOTS];
        uint64_t before = atomic_load_explicit(&slot->seq, memory_order_acquire);
        if (before != index * 2 + 2) continue;
        cc_sec_breadcrumb_t head_fields = { .wall_ns = slot->wall_ns, .level = slot->level };
        uint32_t length = slot->length;
        if (length > CC__BREADCRUMB_TEXT) length = CC__BREADCRUMB_TEXT;
        for (uint32_t i = 0; i < length; i++) text[i] = slot->text[i];
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&slot->seq, memory_order_relaxed) != before) continue;
        cc__section_begin(w, CC_SEC_BREADCRUMB);
        cc__section_put(w, &head_fields, sizeof head_fields);
        cc__section_put(w, text, length);
        cc__section_end(w);
    }
}
