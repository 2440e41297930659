/* cc_gzip.c — gzip (RFC 1952) of a request body through zlib, loaded with dlopen on first use.
 *
 * Why dlopen and not a link: as for libcurl (cc_http.c), a program that links the reporter and
 * never compresses a body should not map libz at exec. libcurl itself needs libz, so a process
 * that sends anything has it mapped already and this load costs nothing more. <zlib.h> gives the
 * types and constants only (zlib's ABI, soname libz.so.1, has been stable since 2006); no symbol
 * of zlib is linked.
 *
 * Not for signal handlers: this allocates and loads a library. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "cc_http.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* zlib's entry points, looked up once. */
static struct {
    pthread_once_t once;
    int (*deflate_init2)(z_streamp, int, int, int, int, int, const char *, int);
    int (*deflate)(z_streamp, int);
    int (*deflate_end)(z_streamp);
    uLong (*deflate_bound)(z_streamp, uLong);
} g_zlib = { .once = PTHREAD_ONCE_INIT };

/* Runs once (pthread_once): dlopen and dlsym; on any failure every pointer stays NULL. */
static void cc_http__gzip_load(void) {
    void *library = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) return;
    void *init = dlsym(library, "deflateInit2_"), *step = dlsym(library, "deflate");
    void *end = dlsym(library, "deflateEnd"), *bound = dlsym(library, "deflateBound");
    if (!init || !step || !end || !bound) return;
    /* POSIX lets a data pointer from dlsym hold a function's address; memcpy says so without a cast warning. */
    memcpy(&g_zlib.deflate_init2, &init, sizeof init);
    memcpy(&g_zlib.deflate, &step, sizeof step);
    memcpy(&g_zlib.deflate_end, &end, sizeof end);
    memcpy(&g_zlib.deflate_bound, &bound, sizeof bound);
}

int cc_http_gzip(const void *input, size_t length, unsigned char **output, size_t *output_length) {
    *output = NULL;
    *output_length = 0;
    if (length > (size_t)UINT32_MAX) return 0;
    pthread_once(&g_zlib.once, cc_http__gzip_load);
    if (!g_zlib.deflate_init2) return 0;
    z_stream stream;
    memset(&stream, 0, sizeof stream);
    /* windowBits 15 + 16: a gzip header and trailer rather than zlib's. */
    if (g_zlib.deflate_init2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                             ZLIB_VERSION, (int)sizeof(z_stream)) != Z_OK) return 0;
    size_t capacity = (size_t)g_zlib.deflate_bound(&stream, (uLong)length) + 64;
    unsigned char *buffer = malloc(capacity);
    if (!buffer) {
        g_zlib.deflate_end(&stream);
        return 0;
    }
    stream.next_in = (Bytef *)(uintptr_t)input;
    stream.avail_in = (uInt)length;
    stream.next_out = buffer;
    stream.avail_out = (uInt)capacity;
    int rc = g_zlib.deflate(&stream, Z_FINISH);
    size_t produced = capacity - stream.avail_out;
    g_zlib.deflate_end(&stream);
    if (rc != Z_STREAM_END) {
        free(buffer);
        return 0;
    }
    *output = buffer;
    *output_length = produced;
    return 1;
}

void cc_http_gzip_free(unsigned char *output) { free(output); }
