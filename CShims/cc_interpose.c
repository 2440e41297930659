/* cc_interpose.c — the two libc functions CrashCapture stands in front of: pthread_create (alternate stacks for new threads) and dl_iterate_phdr (no loader lock while a crash is recorded). */
#include "cc_boot.h"
#include "cc_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <threads.h>
#include <unistd.h>

/*
 * How the interposition works. These definitions, linked into the executable, are the ones
 * every library's call resolves to: in a dynamically linked program the executable's symbol
 * comes first in the lookup order, and the real function is found with dlsym(RTLD_NEXT).
 *
 * Statically linked programs (swiftc -static-executable, cc -static): libc.a defines
 * pthread_create and dl_iterate_phdr as weak aliases of __pthread_create and
 * __dl_iterate_phdr, and an archive member is only linked when something still needs one of
 * its symbols: ours satisfy the public names, so the real code would be left out and every
 * pthread_create would fail. The two anchors below reference public functions (thrd_create,
 * moncontrol) whose members need __pthread_create and __dl_iterate_phdr, which pulls the real
 * code in; the weak references then find it. In a dynamic program the anchors are ordinary
 * references into libc.so and the weak references stay NULL (libc.so does not export them).
 */
extern void moncontrol(int); /* <sys/gmon.h> declares it only for profiling builds */
extern int __pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) __attribute__((weak));
extern int __dl_iterate_phdr(int (*)(struct dl_phdr_info *, size_t, void *), void *) __attribute__((weak));
__attribute__((used)) static void *const g_static_link_anchors[] = { (void *)&thrd_create, (void *)&moncontrol };

typedef int (*cc__pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*cc__iterate_fn)(int (*)(struct dl_phdr_info *, size_t, void *), void *);
static _Atomic(cc__pthread_create_fn) g_real_pthread_create;
static _Atomic(cc__iterate_fn) g_real_iterate;

/* Not async-signal-safe (dlsym): resolves the real functions. Runs when the program is loaded
 * (a constructor, before main and before any thread) and again at install, so neither wrapper
 * calls dlsym later. */
__attribute__((constructor)) void cc__interpose_prepare(void) {
    if (!atomic_load(&g_real_pthread_create)) {
        cc__pthread_create_fn f = __pthread_create;
        if (!f) f = (cc__pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
        if (f) atomic_store(&g_real_pthread_create, f);
    }
    if (!atomic_load(&g_real_iterate)) {
        cc__iterate_fn f = __dl_iterate_phdr;
        if (!f) f = (cc__iterate_fn)dlsym(RTLD_NEXT, "dl_iterate_phdr");
        if (f) atomic_store(&g_real_iterate, f);
    }
}

/*
 * Threads created after install get an alternate stack, so a stack overflow on any thread is
 * recorded: the wrapper starts the thread in a trampoline that sets one up before the real
 * start routine. Before install, or with CC_FLAG_NO_ALTSTACK_NEW_THREADS, it passes straight
 * through. (Threads made with a raw clone(2) are not seen.)
 */
typedef struct { void *(*start)(void *); void *arg; } cc__thread_start_t;

/* Not async-signal-safe (free): the first thing a new thread runs, never reached from a handler. */
static void *cc__thread_trampoline(void *p) {
    cc__thread_start_t start = *(cc__thread_start_t *)p;
    free(p);
    cc_prepare_current_thread();
    /* A tail call: the thread's stack shows the start routine right above libc's
     * start_thread, exactly as without CrashCapture (a backtrace printed by the program, or the
     * Swift runtime's, is the same either way). */
#if defined(__has_attribute)
#if __has_attribute(musttail)
    __attribute__((musttail)) return start.start(start.arg);
#else
    return start.start(start.arg);
#endif
#else
    return start.start(start.arg);
#endif
}

/* Not async-signal-safe (malloc): ordinary thread creation, never reached from a handler. */
int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    cc__pthread_create_fn real = atomic_load(&g_real_pthread_create);
    if (!real) {
        cc__interpose_prepare();
        real = atomic_load(&g_real_pthread_create);
        if (!real) return EAGAIN;
    }
    if (!atomic_load(&cc__g.altstack_new_threads)) return real(thread, attr, start, arg);
    cc__thread_start_t *boxed = malloc(sizeof *boxed);
    if (!boxed) return real(thread, attr, start, arg);
    boxed->start = start;
    boxed->arg = arg;
    int rc = real(thread, attr, cc__thread_trampoline, boxed);
    if (rc != 0) free(boxed);
    return rc;
}

/* async-signal-safe: whether the caller is the thread writing this process's crash record. */
int cc__is_recording_thread(void) {
    uint64_t owner = atomic_load(&cc__g.owner);
    if (owner == 0) owner = atomic_load(&cc__g.snapshot_owner);
    if (owner == 0) return 0;
    return (pid_t)(owner >> 32) == getpid() && (pid_t)(uint32_t)owner == cc__gettid();
}

/* libunwind finds each image's unwind tables through dl_iterate_phdr, which takes the loader
 * lock: with another thread inside dlopen or a dl_iterate_phdr callback, the crash handler
 * would wait forever. While a record (or a snapshot) is written, the calls of the recording thread and of
 * the thread helper (cc_helper.c) are answered from the images collected for the crash
 * (async-signal-safe); every other call goes to the real function. The cost outside a crash is one atomic load. */
int dl_iterate_phdr(int (*callback)(struct dl_phdr_info *, size_t, void *), void *data) {
    if ((atomic_load(&cc__g.owner) != 0 || atomic_load(&cc__g.snapshot_owner) != 0) &&
        (cc__is_recording_thread() || cc__is_helper_process()))
        return cc__images_iterate(callback, data);
    cc__iterate_fn real = atomic_load(&g_real_iterate);
    if (!real) {
        cc__interpose_prepare();
        real = atomic_load(&g_real_iterate);
        if (!real) return 0;
    }
    return real(callback, data);
}
