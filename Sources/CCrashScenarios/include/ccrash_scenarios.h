/* ccrash_scenarios.h — deliberate crashes for crash-harness, each dying exactly as its name says. */
#ifndef CCRASH_SCENARIOS_H
#define CCRASH_SCENARIOS_H

#ifdef __cplusplus
extern "C" {
#endif

void cch_null_dereference(void);
void cch_null_dereference_holding(char *object);
/* C++ exceptions no one catches (cxx_scenarios.cpp). */
void cch_cxx_throw_runtime_error(void);
void cch_cxx_throw_what_throws(void);
void cch_cxx_throw_plain(void);
void cch_cxx_terminate(void);
void cch_cxx_abort_in_catch(void);
void cch_cxx_abort_after_catch(void);
void cch_cxx_install_app_terminate(void);
char *cch_heap_object(void);
/* Sets errno to `value`, then dereferences null: errno must reach a chained handler intact. */
void cch_null_dereference_with_errno(int value);
void cch_write_read_only(void);
void cch_wild_pointer(void);
void cch_stack_overflow(void);
void cch_abort(void);
/* Faults (NULL) inside a SIGUSR2 handler it installs, then raises SIGUSR2. */
void cch_fault_in_signal_handler(void);
void cch_assert(void);
/* SIGBUS: touches a page of a mapped file that was truncated; the file is made in `directory`. */
void cch_sigbus(const char *directory);
void cch_divide_by_zero(void);
void cch_illegal_instruction(void);
void cch_builtin_trap(void);
/* Overwrites the header of the chunk after a large allocation and frees it: glibc aborts
 * from inside free() while holding its arena lock. */
void cch_heap_corruption(void);
/* Installs a SIGSEGV/SIGILL... handler that writes `marker` and the errno it was handed to
 * stderr, resets the signal to SIG_DFL (as real programs do) and returns. */
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
/* The calling thread's id (gettid). */
int cch_gettid(void);
void cch_wait_main_settled(void);
/* exit(status) from a secondary thread while the main thread sleeps. */
void cch_exit_from_thread(int status);


/* Calls through a NULL function pointer: pc 0, the return address still in this function. */
void cch_call_null_function_pointer(void);
/* Sets up an alternate signal stack, then installs a SIGSEGV handler with SA_RESETHAND, a full
 * sa_mask and no SA_ONSTACK that prints (stdout) how it was entered: alternate stack or not,
 * disposition already SIG_DFL, which signals are blocked, errno; then returns. */
void cch_install_flags_probe_handler(void);
/* A SIGSEGV handler that makes the faulting page readable and writable and returns. */
void cch_install_recovering_handler(void);
/* A SIGSEGV handler that prints (stdout) how many threads are inside it at once, waits 50 ms,
 * resets the signal to SIG_DFL and returns. */
void cch_install_counting_handler(void);
/* A SIGSEGV handler that makes the faulting page writable and returns, printing nothing. */
void cch_install_silent_repairing_handler(void);
/* A SIGSEGV handler that siglongjmps out while its thread probes memory (cch_probe_on_thread_then_crash),
 * and otherwise resets the signal to SIG_DFL and returns. */
void cch_install_probing_handler(void);
/* `count` threads meet at a barrier and all write to one read-only page at once; returns how
 * many writes landed (every one, once a handler has repaired the page). */
int cch_concurrent_repaired_writes(int count);
/* A thread probes an unmapped address (its handler leaves with siglongjmp) and stays alive;
 * then this thread dereferences null. */
void cch_probe_on_thread_then_crash(void);
/* Writes to a fresh read-only page (SEGV_ACCERR unless a handler repairs it) and returns what
 * it reads back (42). */
int cch_write_protected_page(void);
/* A SIGBUS handler that returns on BUS_MCEERR_AO (prints "survived ...") and otherwise resets
 * SIGBUS to SIG_DFL and returns. */
void cch_install_mce_handler(void);
/* Queues SIGBUS with si_code BUS_MCEERR_AO to this thread (rt_tgsigqueueinfo on its own tid). */
void cch_queue_sigbus_mce_ao(void);
/* vfork; the child dereferences null; the parent waits, prints how the child ended (stdout),
 * then dereferences null itself. */
void cch_vfork_child_crash(void);
/* Lowers RLIMIT_NOFILE's soft limit near the fds in use and opens /dev/null until EMFILE. */
void cch_exhaust_file_descriptors(int hard);
/* A seccomp filter: ptrace(2) fails with EPERM here and in every process started from here. */
void cch_refuse_ptrace(void);
void cch_refuse_memory_reads(void);
/* Starts `count` threads, each in a different blocking call, every other one blocking every signal. */
void cch_start_blocking_threads(int count);
/* Starts `count` threads that exit(0) as soon as a file is created in `directory`; with
 * `block_signals`, each first blocks every signal. */
void cch_start_threads_that_exit_on_new_file(int count, const char *directory, int block_signals);
/* setrlimit(RLIMIT_FSIZE): soft limit `soft`; hard limit `hard`, or unchanged when negative. */
void cch_limit_file_size(long soft, long hard);
/* Handlers for SIGPROF (ITIMER_PROF every 100 us), SIGUSR1 and SIGCHLD (sent and caused by a
 * thread that blocks all three) count quietly until all three have arrived; this prints a
 * line (stdout), and from then on a handler that runs prints a "late async signal" line; then
 * it dereferences null. */
void cch_async_signals_then_crash(const char *directory);
/* Starts a thread that sleeps forever inside a dl_iterate_phdr callback (holding the loader
 * lock) and returns once it is there. */
void cch_start_thread_inside_dl_iterate_phdr(void);
/* Starts a thread that blocks every signal and sleeps forever; returns once it is there. */
void cch_start_thread_blocking_all_signals(void);
/* One nanosleep of `seconds`, not resumed if interrupted (then it says so on stderr), then
 * exit(0): main returning while a worker's crash is being handled. */
void cch_sleep_once_then_exit(long seconds);

/* Crashes with the frame pointer on a fake frame whose async context chain has a bad shape:
 * 0 cycle, 1 unreadable parent, 2 misaligned parent, 3 longer than the link budget, 4 a first
 * resume point that is not code. */
void cch_crash_with_fake_async_context(int shape);

/* glibc aborts with a message: a double free caught by the tcache; a fortified memcpy overflow. */
void cch_double_free(void);
void cch_fortify_overflow(void);

/* The length of the text the Swift runtime has reported so far (the buffer behind
 * swift_getFatalErrorMessageBuffer, to which it appends every report, warnings included), or 0
 * when it has reported nothing or the runtime exports no such buffer. */
long cch_swift_reports_length(void);

#ifdef __cplusplus
}
#endif
#endif
