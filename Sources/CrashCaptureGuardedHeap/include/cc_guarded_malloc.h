/* cc_guarded_malloc.h — the guarded heap's replacement of the C library's allocator
 * (cc_guarded_malloc.c). Nothing to call: linking it is what turns it on for the process, and
 * `CRASHCAPTURE_GUARDED_HEAP=<1 in N>[:<slots>]` what starts it. */
#ifndef CC_GUARDED_MALLOC_H
#define CC_GUARDED_MALLOC_H
#include <stdint.h>

/* Slots when the variable names none. */
extern uint32_t cc_guarded_malloc_default_slots;

#endif
