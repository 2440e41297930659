/* cc_registers.c — one register layout for the record: the crashed thread's, the parked
 * threads' and the ptraced threads' registers all go through cc__registers_payload. */
#include "cc_boot.h"
#include "cc_internal.h"

/* async-signal-safe: appends `len` bytes if they fit. */
size_t cc__registers_put(unsigned char *out, size_t at, size_t cap, const void *data, size_t len) {
    if (at + len > cap) return cap + 1;
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) out[at + i] = p[i];
    return at + len;
}

/* async-signal-safe */
size_t cc__registers_put_one(unsigned char *out, size_t at, size_t cap, const char *name, uint64_t value) {
    cc_register_t r = { .value = value };
    for (size_t i = 0; i + 1 < sizeof r.name && name[i]; i++) r.name[i] = name[i];
    return cc__registers_put(out, at, cap, &r, sizeof r);
}

/* async-signal-safe: the head and the registers of this architecture (cc__arch_registers). */
size_t cc__registers_payload(const ucontext_t *uc, void *buffer, size_t cap) {
    size_t at = cc__arch_registers(uc, buffer, 0, cap);
    return at > cap ? 0 : at;
}
