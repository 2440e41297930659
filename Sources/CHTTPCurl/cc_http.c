/* cc_http.c — one HTTP request through libcurl, loaded with dlopen on the first request.
 *
 * Why dlopen and not a link: libcurl.so.4 brings some thirty libraries of its own (TLS, Kerberos,
 * LDAP, SSH, HTTP/2, IDN…) that the loader would map at exec in every program that links the
 * reporter, whether or not it ever sends anything. Loaded here, they are paid for only by a
 * process that makes a request, on the uploading thread, off the launch path. libcurl's ABI
 * (soname libcurl.so.4) has been stable since 2006, so the few option numbers used below are
 * written here rather than taken from <curl/curl.h>: building needs no libcurl headers.
 *
 * Not for signal handlers: this allocates, locks and loads libraries. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "cc_http.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The libcurl ABI this file uses (values from curl/curl.h; stable across libcurl.so.4). */
typedef void CURL;
typedef int CURLcode;
typedef int64_t curl_off_t;
struct curl_slist;
enum {
    CURLE_OK = 0,
    CURLE_WRITE_ERROR = 23,
    CURLE_OPERATION_TIMEDOUT = 28,
    CURLE_ABORTED_BY_CALLBACK = 42,
};
enum {
    CC_HTTP__LONG = 0, CC_HTTP__POINTER = 10000, CC_HTTP__FUNCTION = 20000, CC_HTTP__OFF_T = 30000,
    CURLOPT_WRITEDATA = CC_HTTP__POINTER + 1,
    CURLOPT_URL = CC_HTTP__POINTER + 2,
    CURLOPT_ERRORBUFFER = CC_HTTP__POINTER + 10,
    CURLOPT_WRITEFUNCTION = CC_HTTP__FUNCTION + 11,
    CURLOPT_POSTFIELDS = CC_HTTP__POINTER + 15,
    CURLOPT_LOW_SPEED_LIMIT = CC_HTTP__LONG + 19,
    CURLOPT_LOW_SPEED_TIME = CC_HTTP__LONG + 20,
    CURLOPT_HTTPHEADER = CC_HTTP__POINTER + 23,
    CURLOPT_HEADERDATA = CC_HTTP__POINTER + 29,
    CURLOPT_NOPROGRESS = CC_HTTP__LONG + 43,
    CURLOPT_POST = CC_HTTP__LONG + 47,
    CURLOPT_FOLLOWLOCATION = CC_HTTP__LONG + 52,
    CURLOPT_XFERINFODATA = CC_HTTP__POINTER + 57,
    CURLOPT_MAXREDIRS = CC_HTTP__LONG + 68,
    CURLOPT_HEADERFUNCTION = CC_HTTP__FUNCTION + 79,
    CURLOPT_HTTPGET = CC_HTTP__LONG + 80,
    CURLOPT_NOSIGNAL = CC_HTTP__LONG + 99,
    CURLOPT_ACCEPT_ENCODING = CC_HTTP__POINTER + 102,
    CURLOPT_POSTFIELDSIZE_LARGE = CC_HTTP__OFF_T + 120,
    CURLOPT_TIMEOUT_MS = CC_HTTP__LONG + 155,
    CURLOPT_CONNECTTIMEOUT_MS = CC_HTTP__LONG + 156,
    CURLOPT_PROTOCOLS = CC_HTTP__LONG + 181,
    CURLOPT_REDIR_PROTOCOLS = CC_HTTP__LONG + 182,
    CURLOPT_XFERINFOFUNCTION = CC_HTTP__FUNCTION + 219,
};
enum { CURLINFO_RESPONSE_CODE = 0x200000 + 2 };
enum { CURLPROTO_HTTP = 1 << 0, CURLPROTO_HTTPS = 1 << 1 };
enum { CURL_GLOBAL_ALL = 3, CURL_ERROR_SIZE = 256 };
/* Redirects followed at most: more than any real chain of mirrors; a loop ends here. */
enum { CC_HTTP__MAX_REDIRECTS = 16 };

struct cc_http_cancel {
    int flag; /* only through __atomic builtins */
};

/* Everything loaded once, by cc_http__load under g_state.once. */
static struct {
    pthread_once_t once;
    int loaded;
    char failure[sizeof(((cc_http_response *)0)->error)];
    void *library;
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, int option, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, int info, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} g_state = {.once = PTHREAD_ONCE_INIT};

cc_http_cancel *cc_http_cancel_create(void) { return calloc(1, sizeof(cc_http_cancel)); }

void cc_http_cancel_set(cc_http_cancel *cancel) { __atomic_store_n(&cancel->flag, 1, __ATOMIC_RELEASE); }

int cc_http_cancel_is_set(const cc_http_cancel *cancel) { return __atomic_load_n(&cancel->flag, __ATOMIC_ACQUIRE); }

void cc_http_cancel_destroy(cc_http_cancel *cancel) { free(cancel); }

/* Resolves one libcurl function; on failure notes which one. */
static void *cc_http__symbol(const char *name, const char *path) {
    void *symbol = dlsym(g_state.library, name);
    if (!symbol && !g_state.failure[0]) {
        snprintf(g_state.failure, sizeof g_state.failure, "%s has no %s: not a usable libcurl", path, name);
    }
    return symbol;
}

/* Runs once (pthread_once): dlopen, dlsym, curl_global_init (which is not thread-safe itself:
 * this is its one call). On failure g_state.failure says why and nothing is kept loaded. */
static void cc_http__load(void) {
    /* secure_getenv: a set-user-id program does not let its caller pick a library to load. */
    const char *path = secure_getenv("CRASHCAPTURE_LIBCURL");
    if (!path || !*path) path = "libcurl.so.4";
    /* RTLD_LOCAL: libcurl's symbols do not join the global namespace (the program may carry
     * another libcurl of its own); RTLD_NOW: a broken install fails here, not mid-request. */
    g_state.library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!g_state.library) {
        const char *why = dlerror();
        snprintf(g_state.failure, sizeof g_state.failure,
                 "HTTP needs libcurl.so.4 (Debian/Ubuntu: apt-get install libcurl4): %s", why ? why : path);
        return;
    }
    g_state.global_init = (CURLcode(*)(long))cc_http__symbol("curl_global_init", path);
    g_state.easy_init = (CURL * (*)(void)) cc_http__symbol("curl_easy_init", path);
    g_state.easy_setopt = (CURLcode(*)(CURL *, int, ...))cc_http__symbol("curl_easy_setopt", path);
    g_state.easy_perform = (CURLcode(*)(CURL *))cc_http__symbol("curl_easy_perform", path);
    g_state.easy_getinfo = (CURLcode(*)(CURL *, int, ...))cc_http__symbol("curl_easy_getinfo", path);
    g_state.easy_cleanup = (void (*)(CURL *))cc_http__symbol("curl_easy_cleanup", path);
    g_state.easy_strerror = (const char *(*)(CURLcode))cc_http__symbol("curl_easy_strerror", path);
    g_state.slist_append = (struct curl_slist * (*)(struct curl_slist *, const char *)) cc_http__symbol("curl_slist_append", path);
    g_state.slist_free_all = (void (*)(struct curl_slist *))cc_http__symbol("curl_slist_free_all", path);
    if (g_state.failure[0]) {
        dlclose(g_state.library);
        g_state.library = NULL;
        return;
    }
    CURLcode code = g_state.global_init(CURL_GLOBAL_ALL);
    if (code != CURLE_OK) {
        snprintf(g_state.failure, sizeof g_state.failure, "curl_global_init failed (%d)", code);
        return; /* kept loaded: libcurl may have started initialising global state */
    }
    g_state.loaded = 1;
}

/* What one transfer collects; the callbacks' user data. */
struct cc_http__transfer {
    const cc_http_request *request;
    char *headers;
    size_t headers_length, headers_capacity;
    unsigned char *body;
    size_t body_length, body_capacity;
    int too_large, out_of_memory;
};

/* Appends to a growable buffer, keeping a NUL after the data; 0 when out of memory. */
static int cc_http__append(void **buffer, size_t *length, size_t *capacity, const void *data, size_t count) {
    if (*length + count + 1 > *capacity) {
        size_t wanted = *capacity ? *capacity : 4096;
        while (wanted < *length + count + 1) wanted *= 2;
        void *grown = realloc(*buffer, wanted);
        if (!grown) return 0;
        *buffer = grown;
        *capacity = wanted;
    }
    memcpy((char *)*buffer + *length, data, count);
    *length += count;
    ((char *)*buffer)[*length] = 0;
    return 1;
}

static size_t cc_http__on_body(char *data, size_t size, size_t count, void *context) {
    struct cc_http__transfer *transfer = context;
    size_t bytes = size * count;
    if (transfer->body_length + bytes > transfer->request->max_body) {
        transfer->too_large = 1;
        return 0; /* CURLE_WRITE_ERROR */
    }
    if (!cc_http__append((void **)&transfer->body, &transfer->body_length, &transfer->body_capacity, data, bytes)) {
        transfer->out_of_memory = 1;
        return 0;
    }
    return bytes;
}

/* One header line at a time, of every response (a redirect's, a 100 Continue's, then the final
 * one's): a status line starts a response, so what came before it is dropped. */
static size_t cc_http__on_header(char *data, size_t size, size_t count, void *context) {
    struct cc_http__transfer *transfer = context;
    size_t bytes = size * count;
    if (bytes >= 5 && memcmp(data, "HTTP/", 5) == 0) {
        transfer->headers_length = 0;
        transfer->body_length = 0;
    }
    if (!cc_http__append((void **)&transfer->headers, &transfer->headers_length, &transfer->headers_capacity, data, bytes)) {
        transfer->out_of_memory = 1;
        return 0;
    }
    return bytes;
}

/* libcurl calls this about once a second and whenever data moves: non-zero aborts the transfer
 * (CURLE_ABORTED_BY_CALLBACK). */
static int cc_http__on_progress(void *context, curl_off_t download_total, curl_off_t downloaded, curl_off_t upload_total,
                           curl_off_t uploaded) {
    (void)download_total, (void)downloaded, (void)upload_total, (void)uploaded;
    const cc_http_cancel *cancel = context;
    return cc_http_cancel_is_set(cancel);
}

static void cc_http__fail(cc_http_response *response, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void cc_http__fail(cc_http_response *response, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(response->error, sizeof response->error, format, arguments);
    va_end(arguments);
    response->status = 0;
}

void cc_http_perform(const cc_http_request *request, cc_http_response *response) {
    memset(response, 0, sizeof *response);
    if (request->cancel && cc_http_cancel_is_set(request->cancel)) {
        response->cancelled = 1;
        cc_http__fail(response, "cancelled");
        return;
    }
    pthread_once(&g_state.once, cc_http__load);
    if (!g_state.loaded) {
        cc_http__fail(response, "%s", g_state.failure);
        return;
    }
    CURL *curl = g_state.easy_init();
    if (!curl) {
        cc_http__fail(response, "curl_easy_init failed");
        return;
    }
    struct cc_http__transfer transfer = {.request = request};
    struct curl_slist *headers = NULL;
    int headers_ok = 1;
    for (size_t i = 0; i < request->header_count && headers_ok; i++) {
        struct curl_slist *appended = g_state.slist_append(headers, request->headers[i]);
        if (appended) headers = appended;
        else headers_ok = 0;
    }
    /* No "Expect: 100-continue" on a large POST: a server that does not answer it would cost a
     * second per request. */
    struct curl_slist *appended = headers_ok ? g_state.slist_append(headers, "Expect:") : NULL;
    if (!appended) {
        g_state.slist_free_all(headers);
        g_state.easy_cleanup(curl);
        cc_http__fail(response, "out of memory");
        return;
    }
    headers = appended;
    char error[CURL_ERROR_SIZE] = {0};

    CURLcode (*setopt)(CURL *, int, ...) = g_state.easy_setopt;
    setopt(curl, CURLOPT_URL, request->url);
    setopt(curl, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    setopt(curl, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    /* Threads: no SIGALRM for DNS timeouts (libcurl would otherwise use alarm() and a
     * process-wide handler). Sockets are written with MSG_NOSIGNAL, so no SIGPIPE either. */
    setopt(curl, CURLOPT_NOSIGNAL, 1L);
    setopt(curl, CURLOPT_ERRORBUFFER, error);
    setopt(curl, CURLOPT_HTTPHEADER, headers);
    /* Redirects are followed, as URLSession did (debuginfod servers redirect to mirrors). A 301,
     * 302 or 303 answer to a POST is followed with a GET (libcurl's default, as browsers do). */
    setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    setopt(curl, CURLOPT_MAXREDIRS, (long)CC_HTTP__MAX_REDIRECTS);
    /* "": every encoding this libcurl can decode is offered, and the body arrives decoded. */
    setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
    if (request->post) {
        setopt(curl, CURLOPT_POST, 1L);
        /* Always set, even empty: a POST without it would read its body from stdin. */
        setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)request->body_length);
        setopt(curl, CURLOPT_POSTFIELDS, request->body ? request->body : (const void *)"");
    } else {
        setopt(curl, CURLOPT_HTTPGET, 1L);
    }
    if (request->total_timeout_ms > 0) setopt(curl, CURLOPT_TIMEOUT_MS, request->total_timeout_ms);
    if (request->connect_timeout_ms > 0) setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, request->connect_timeout_ms);
    if (request->idle_timeout_ms > 0) {
        /* Below one byte a second for that many seconds: nothing moved (URLSession's request
         * timeout, elfutils' DEBUGINFOD_TIMEOUT). */
        setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
        setopt(curl, CURLOPT_LOW_SPEED_TIME, (request->idle_timeout_ms + 999) / 1000);
    }
    setopt(curl, CURLOPT_WRITEFUNCTION, cc_http__on_body);
    setopt(curl, CURLOPT_WRITEDATA, &transfer);
    setopt(curl, CURLOPT_HEADERFUNCTION, cc_http__on_header);
    setopt(curl, CURLOPT_HEADERDATA, &transfer);
    if (request->cancel) {
        setopt(curl, CURLOPT_XFERINFOFUNCTION, cc_http__on_progress);
        setopt(curl, CURLOPT_XFERINFODATA, request->cancel);
        setopt(curl, CURLOPT_NOPROGRESS, 0L);
    }

    CURLcode code = g_state.easy_perform(curl);
    long status = 0;
    if (code == CURLE_OK) g_state.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    g_state.easy_cleanup(curl);
    g_state.slist_free_all(headers);

    if (code == CURLE_OK && status > 0) {
        response->status = status;
        response->headers = transfer.headers;
        response->headers_length = transfer.headers_length;
        response->body = transfer.body;
        response->body_length = transfer.body_length;
        return;
    }
    free(transfer.headers);
    free(transfer.body);
    if (code == CURLE_OK) {
        cc_http__fail(response, "no HTTP status in the answer");
    } else if (code == CURLE_ABORTED_BY_CALLBACK) {
        response->cancelled = 1;
        cc_http__fail(response, "cancelled");
    } else if (code == CURLE_WRITE_ERROR && transfer.too_large) {
        cc_http__fail(response, "response body larger than %zu bytes", request->max_body);
    } else if (transfer.out_of_memory) {
        cc_http__fail(response, "out of memory");
    } else {
        response->timed_out = code == CURLE_OPERATION_TIMEDOUT;
        cc_http__fail(response, "%s", error[0] ? error : g_state.easy_strerror(code));
    }
}

void cc_http_response_free(cc_http_response *response) {
    free(response->headers);
    free(response->body);
    response->headers = NULL;
    response->body = NULL;
    response->headers_length = response->body_length = 0;
}
