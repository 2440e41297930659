/* ccrash_scenarios.h — deliberate crashes for crash-harness, each dying exactly as its name says. */
#ifndef CCRASH_SCENARIOS_H
#define CCRASH_SCENARIOS_H

#ifdef __cplusplus
extern "C" {
#endif

void cch_null_dereference(void);
/* Sets errno to `value`, then dereferences null: errno must reach a chained handler intact. */
void cch_null_dereference_with_errno(int value);
void cch_write_read_only(void);
void cch_wild_pointer(void);
void cch_stack_overflow(void);
void cch_abort(void);
void cch_assert(void);
/* SIGBUS: touches a page of a mapped file that was truncated; the file is made in `directory`. */
void cch_sigbus(const char *directory);
void cch_divide_by_zero(void);
void cch_illegal_instruction(void);
void cch_builtin_trap(void);
/* Overwrites the header of the chunk after a large allocation and frees it: glibc aborts
 * from inside free() while holding its arena lock. */
void cch_heap_corruption(void);
/* Installs a SIGSEGV/SIGILL... handler that writes `marker` to stderr and returns. */
void cch_install_handler_before(const char *marker);
/* Installs, over whatever is there (CrashCapture), a SIGSEGV handler that writes `marker` to
 * stderr and then calls the handler it replaced. */
void cch_install_handler_after(const char *marker);
/* Starts `count` threads that malloc and free without pause (so glibc's arena locks are
 * held at any moment), waits until they run, then dereferences null on this thread. */
void cch_crash_while_malloc_busy(int count);
/* Forks; the child dereferences null; the parent waits and exits with 100 + the child's
 * signal number (so the parent itself leaves no record). */
void cch_crash_in_forked_child(void);
/* Runs `count` threads that meet at a barrier and then all dereference null at once. */
void cch_concurrent_crashes(int count);
/* Sends `signo` to this process from another process (/bin/kill) and waits to die. */
void cch_signal_from_other_process(int signo);
/* A one-shot flag between threads: the main thread marks itself settled (out of
 * pthread_create, which blocks every signal for a moment); a thread about to crash waits for it,
 * so the main thread can answer the crash handler's stack request. */
void cch_mark_main_settled(void);
void cch_wait_main_settled(void);
/* exit(status) from a secondary thread while the main thread sleeps. */
void cch_exit_from_thread(int status);

#ifdef __cplusplus
}
#endif
#endif
