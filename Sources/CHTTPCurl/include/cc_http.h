// cc_http.h — one HTTP request through libcurl, which is loaded with dlopen the first time a
// request is made (never at exec: a program that never uploads never maps libcurl).
#ifndef CC_HTTP_H
#define CC_HTTP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A cancellation flag (an atomic int) that a request in flight checks about once a second and
/// between transfers; once set it stays set, so a request started afterwards is not sent at all.
typedef struct cc_http_cancel cc_http_cancel;

/// A new, unset flag; NULL when out of memory.
cc_http_cancel *cc_http_cancel_create(void);
/// Sets the flag (any thread).
void cc_http_cancel_set(cc_http_cancel *cancel);
/// Whether the flag is set.
int cc_http_cancel_is_set(const cc_http_cancel *cancel);
void cc_http_cancel_destroy(cc_http_cancel *cancel);

typedef struct {
    /// http:// or https:// (other schemes are refused, redirects included).
    const char *url;
    /// 0: GET; 1: POST with `body`.
    int post;
    /// `header_count` lines "Name: value".
    const char *const *headers;
    size_t header_count;
    const void *body;
    size_t body_length;
    /// The whole exchange, redirects included (CURLOPT_TIMEOUT_MS); 0: none.
    long total_timeout_ms;
    /// Connecting (CURLOPT_CONNECTTIMEOUT_MS); 0: libcurl's default.
    long connect_timeout_ms;
    /// No byte sent or received for this long: timed out (rounded up to whole seconds); 0: none.
    long idle_timeout_ms;
    /// A longer response body fails the request.
    size_t max_body;
    /// Checked while the request runs; NULL: not cancellable.
    cc_http_cancel *cancel;
} cc_http_request;

typedef struct {
    /// The final response's HTTP status; 0 when there was none (not loaded, network error,
    /// timeout, cancelled, body too large).
    long status;
    /// The final response's header lines, as received ("Name: value\r\n"…, status line first);
    /// malloc'ed, NUL-terminated, or NULL.
    char *headers;
    size_t headers_length;
    /// The final response's body (decoded if the server compressed it); malloc'ed or NULL.
    unsigned char *body;
    size_t body_length;
    /// libcurl reported CURLE_OPERATION_TIMEDOUT (the total, connect or idle timeout).
    int timed_out;
    /// Stopped by the cancellation flag.
    int cancelled;
    /// Why there is no status (empty otherwise).
    char error[512];
} cc_http_response;

/// Performs `request`, filling `response` (which the caller frees with cc_http_response_free,
/// whatever happened). Blocking, thread-safe, no signals (CURLOPT_NOSIGNAL). The first call
/// loads libcurl.so.4 (or the file `$CRASHCAPTURE_LIBCURL` names); when it cannot be loaded
/// every request fails with status 0 and an error saying so.
void cc_http_perform(const cc_http_request *request, cc_http_response *response);

/// Frees what cc_http_perform allocated in `response` (safe on a zeroed one).
void cc_http_response_free(cc_http_response *response);

/// gzip (RFC 1952) of `length` bytes at `input`, through libz.so.1 loaded with dlopen on the
/// first call (cc_gzip.c). Returns 1 with a malloc'ed `*output` of `*output_length` bytes (free it
/// with cc_http_gzip_free), or 0 (no zlib, out of memory, over 4 GiB) with `*output` NULL.
int cc_http_gzip(const void *input, size_t length, unsigned char **output, size_t *output_length);
void cc_http_gzip_free(unsigned char *output);

#ifdef __cplusplus
}
#endif

#endif
