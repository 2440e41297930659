/* cc_interpose.c — the one libc function CrashCapture stands in front of: pthread_create (alternate stacks for new threads). */
#include "cc_boot.h"
#include "cc_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
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
/* Each thread's alternate signal stack, which the handler runs on after a stack overflow: made
 * here for every thread pthread_create starts, and by cc_install for the installing thread. */
static pthread_key_t g_altstack_key;
static pthread_once_t g_altstack_key_once = PTHREAD_ONCE_INIT;

/* The alternate stack's size: 64 KiB, or four times what the kernel asks for on this CPU
 * (AVX-512 state makes signal frames large), whichever is larger. */
static size_t cc__altstack_size(void) {
    size_t size = CC__ALTSTACK_SIZE;
    long minimum = sysconf(_SC_SIGSTKSZ);
    if (minimum > 0 && (size_t)minimum * 4 > size) size = (size_t)minimum * 4;
    return size;
}

/* Thread exit: takes down the alternate stack cc_prepare_current_thread mapped. */
static void cc__altstack_release(void *mapping) {
    size_t page = (size_t)getpagesize();
    stack_t current;
    if (sigaltstack(0, &current) == 0 && !(current.ss_flags & SS_ONSTACK) &&
        current.ss_sp == (char *)mapping + page) {
        stack_t off = { .ss_flags = SS_DISABLE };
        sigaltstack(&off, 0);
    }
    munmap(mapping, cc__altstack_size() + page);
}

static void cc__altstack_key_create(void) { pthread_key_create(&g_altstack_key, cc__altstack_release); }

int cc_prepare_current_thread(void) {
    size_t size = cc__altstack_size(), page = (size_t)getpagesize();
    stack_t current;
    /* Keep an existing alternate stack that is big enough (the Swift runtime, or the host
     * program, may have set one up): replacing it would pull it out from under its owner. */
    if (sigaltstack(0, &current) == 0 && !(current.ss_flags & SS_DISABLE) && current.ss_size >= size / 2) {
        return 0;
    }
    void *mapping = mmap(0, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) return -1;
    mprotect(mapping, page, PROT_NONE); /* guard page: an overflow of the alternate stack faults */
    stack_t stack = { .ss_sp = (char *)mapping + page, .ss_size = size, .ss_flags = 0 };
    if (sigaltstack(&stack, 0) != 0) { munmap(mapping, size + page); return -1; }
    pthread_once(&g_altstack_key_once, cc__altstack_key_create);
    pthread_setspecific(g_altstack_key, mapping);
    return 0;
}

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
