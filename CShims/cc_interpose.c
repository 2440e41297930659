/* cc_interpose.c — the one libc function CrashCapture stands in front of: pthread_create (alternate stacks for new threads). */
#include "cc_boot.h"
#include "cc_internal.h"

#include <dlfcn.h>
#include <errno.h>
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
 * pthread_create as a weak alias of __pthread_create, and an archive member is only linked
 * when something still needs one of its symbols: ours satisfies the public name, so the real
 * code would be left out and every pthread_create would fail. The anchor below references a
 * public function (thrd_create) whose member needs __pthread_create, which pulls the real code
 * in; the weak reference then finds it. In a dynamic program the anchor is an ordinary
 * reference into libc.so and the weak reference stays NULL (libc.so does not export it).
 */
extern int __pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) __attribute__((weak));
__attribute__((used)) static void *const g_static_link_anchors[] = { (void *)&thrd_create };

typedef int (*cc__pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static _Atomic(cc__pthread_create_fn) g_real_pthread_create;

/* Not async-signal-safe (dlsym): resolves the real function. Runs when the program is loaded
 * (a constructor, before main and before any thread) and again at install, so the wrapper
 * does not call dlsym later. */
__attribute__((constructor)) void cc__interpose_prepare(void) {
    if (!atomic_load(&g_real_pthread_create)) {
        cc__pthread_create_fn f = __pthread_create;
        if (!f) f = (cc__pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
        if (f) atomic_store(&g_real_pthread_create, f);
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
