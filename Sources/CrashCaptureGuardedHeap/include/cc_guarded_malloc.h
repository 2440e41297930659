/* cc_guarded_malloc.h — the guarded heap's replacement of the C library's allocator
 * (cc_guarded_malloc.c). Nothing to call: linking it is what turns it on for the process, and
 * `CRASHCAPTURE_GUARDED_HEAP=<1 in N>[:<slots>]` what starts it. */
#ifndef CC_GUARDED_MALLOC_H
#define CC_GUARDED_MALLOC_H
#include <stdint.h>

/* Slots when the variable names none. */
extern uint32_t cc_guarded_malloc_default_slots;

/* Turns it on from the program (once; the variable, when set, already did): one allocation in
 * `sample_rate` from now on, in `slots` slots (0: the default, 256). Best called first thing in
 * main. 0 started, -1 not (already on, or the pool could not be mapped: errno says why). */
int cc_guarded_malloc_start(uint32_t sample_rate, uint32_t slots);

/* Whether it is on (1) or not (0); allocations sampled since, slots in use now. */
int cc_guarded_malloc_status(uint64_t *sampled, uint32_t *in_use);

#endif
