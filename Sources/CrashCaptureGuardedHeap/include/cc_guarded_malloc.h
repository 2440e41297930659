/* cc_guarded_malloc.h — the guarded heap's replacement of the C library's allocator
 * (cc_guarded_malloc.c). Nothing to call: linking it is what turns it on for the process, and
 * `CRASHCAPTURE_GUARDED_HEAP=<1 in N>[:<slots>]` what starts it. */
#ifndef CC_GUARDED_MALLOC_H
#define CC_GUARDED_MALLOC_H
#include <stdint.h>

/* Slots when the variable names none. */
extern uint32_t cc_guarded_malloc_default_slots;

/* Whether the variable turned it on (1) or not (0); allocations sampled since, slots in use now. */
int cc_guarded_malloc_status(uint64_t *sampled, uint32_t *in_use);

#endif
