/* csqlite.c — SQLite loaded with dlopen when the tracking store is first opened (csqlite.h says
 * why), and text bound with SQLITE_TRANSIENT. Not for signal handlers: this loads a library. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "csqlite.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* SQLite's entry points, looked up once; `loaded` only when every one was found. */
static struct {
    pthread_once_t once;
    int loaded;
    char why[256];
    int (*open_v2)(const char *, sqlite3 **, int, const char *);
    const char *(*errmsg)(sqlite3 *);
    const char *(*errstr)(int);
    int (*bind_text)(sqlite3_stmt *, int, const char *, int, void (*)(void *));
#define CSQLITE_POINTER(type, name, parameters, arguments) type (*name) parameters;
    CSQLITE_FUNCTIONS(CSQLITE_POINTER)
#undef CSQLITE_POINTER
} g_sqlite = { .once = PTHREAD_ONCE_INIT };

/* POSIX lets a data pointer from dlsym hold a function's address; memcpy says so without a cast warning. */
#define CSQLITE_FIND(slot, symbol) do { \
        void *found = dlsym(library, symbol); \
        if (!found) { snprintf(g_sqlite.why, sizeof g_sqlite.why, "libsqlite3 has no %s", symbol); return; } \
        memcpy(&g_sqlite.slot, &found, sizeof found); \
    } while (0)

/* Runs once (pthread_once): SQLite as the process has it already, else libsqlite3.so.0. */
static void csqlite__load(void) {
    void *library = dlsym(RTLD_DEFAULT, "sqlite3_open_v2") ? RTLD_DEFAULT : dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *error = dlerror();
        snprintf(g_sqlite.why, sizeof g_sqlite.why, "SQLite could not be loaded: %s", error ? error : "libsqlite3.so.0 not found");
        return;
    }
    CSQLITE_FIND(open_v2, "sqlite3_open_v2");
    CSQLITE_FIND(errmsg, "sqlite3_errmsg");
    CSQLITE_FIND(errstr, "sqlite3_errstr");
    CSQLITE_FIND(bind_text, "sqlite3_bind_text");
#define CSQLITE_LOOKUP(type, name, parameters, arguments) CSQLITE_FIND(name, "sqlite3_" #name);
    CSQLITE_FUNCTIONS(CSQLITE_LOOKUP)
#undef CSQLITE_LOOKUP
    g_sqlite.loaded = 1;
}

int csqlite_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs) {
    pthread_once(&g_sqlite.once, csqlite__load);
    if (!g_sqlite.loaded) {
        *db = NULL;
        return SQLITE_CANTOPEN;
    }
    return g_sqlite.open_v2(filename, db, flags, vfs);
}

const char *csqlite_errmsg(sqlite3 *db) {
    pthread_once(&g_sqlite.once, csqlite__load);
    return g_sqlite.loaded ? g_sqlite.errmsg(db) : g_sqlite.why;
}

const char *csqlite_errstr(int code) {
    pthread_once(&g_sqlite.once, csqlite__load);
    return g_sqlite.loaded ? g_sqlite.errstr(code) : g_sqlite.why;
}

#define CSQLITE_DEFINE(type, name, parameters, arguments) type csqlite_##name parameters { return g_sqlite.name arguments; }
CSQLITE_FUNCTIONS(CSQLITE_DEFINE)
#undef CSQLITE_DEFINE

int csqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length) {
    return g_sqlite.bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}
