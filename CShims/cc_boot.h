/* cc_boot.h — included first by every .c file in CShims: feature macros before any system header. */
#ifndef CC_BOOT_H
#define CC_BOOT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#if !defined(__LITTLE_ENDIAN__) && !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
#error "CrashCapture records are little-endian; this target is not"
#endif

#endif /* CC_BOOT_H */
