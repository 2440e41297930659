/* cc_helper.h — what the crashed process and its thread helper process share: the protocol
 * between them and the register layout both write (no libunwind here: the two sides link
 * different libunwind flavours). */
#ifndef CC_HELPER_H
#define CC_HELPER_H

#include "cc_boot.h"
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <ucontext.h>

/*
 * The thread helper. Threads that block the stop signal (libdispatch workers, the Swift
 * concurrency pool, anything that masks every signal) cannot stop themselves, so at a crash
 * the recording thread starts a helper process: the same executable, re-run with
 * CC__HELPER_ENV=<crashed pid> in its environment, which cc_helper_main.c catches in a
 * constructor before main. The helper ptrace-stops each thread it is given, reads its
 * registers and unwinds it from outside (libunwind's ptrace accessors), and sends the results
 * back over a socket as record sections, which the crashed process checks and writes itself.
 * It keeps the threads stopped until the crashed process is gone (the socket reaches EOF).
 *
 * Protocol over one AF_UNIX stream socket (the helper's fd 0 and 1):
 *   crashed process -> helper: uint32_t count, then count x int32_t tid.
 *   helper -> crashed process: messages, each a cc_section_header_t {type, length} and
 *   `length` payload bytes in the record's own section layout: CC_SEC_THREAD_REGISTERS, then
 *   CC_SEC_THREAD, per thread (CC_THREAD_PTRACED, or CC_THREAD_PTRACE_REFUSED without frames),
 *   and CC_SEC_STRING notes (CC_STR_NOTE). A message of type 0, length 0 ends the answer.
 */
#define CC__HELPER_ENV        "CRASHCAPTURE_THREAD_HELPER"
#define CC__HELPER_MAX_TIDS   1024
#define CC__HELPER_FRAMES     128
#define CC__HELPER_PAYLOAD    (64 * 1024)

/* async-signal-safe: a CC_SEC_REGISTERS payload (cc_sec_registers_t + registers) for the
 * context into out; returns its length (0 when cap is too small). */
size_t cc__registers_payload(const ucontext_t *uc, void *out, size_t cap);

#endif /* CC_HELPER_H */
