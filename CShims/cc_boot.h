/* cc_boot.h — included first by every .c file in CShims: feature macros before any system header. */
#ifndef CC_BOOT_H
#define CC_BOOT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
/* Local-only unwinding: the cheaper libunwind flavour, and the one whose unw_step is
 * documented as signal-safe. Must precede <libunwind.h>. */
#define UNW_LOCAL_ONLY 1

/* The one build-time dependency outside the Swift toolchain: libunwind's header (the library
 * itself is loaded at start when it is there, cc_unwind.c). */
#if defined(__has_include)
#if !__has_include(<libunwind.h>)
#error "CrashCapture needs libunwind's header <libunwind.h>: install libunwind-dev (Debian, Ubuntu: apt-get install libunwind-dev) or libunwind-devel (Fedora, RHEL: dnf install libunwind-devel)"
#endif
#endif

#if !defined(__LITTLE_ENDIAN__) && !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
#error "CrashCapture records are little-endian; this target is not"
#endif

#endif /* CC_BOOT_H */
