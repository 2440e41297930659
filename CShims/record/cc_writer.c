/* cc_writer.c — writes one record in the cc_record.h layout, whole sections only (async-signal-safe). */
#include "cc_boot.h"
#include "cc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* async-signal-safe: the record will not be whole. Stops every later write; the first failure's
 * step and errno (still the failing call's when this is called) are kept for the stderr summary
 * (cc_summary.c). */
void cc__writer_fail(cc__writer_t *w, const char *step) {
    if (w->failed) return;
    w->failed = 1;
    w->error = errno;
    w->failed_step = step;
}

/* async-signal-safe: creates the file (0600, O_EXCL, O_NOFOLLOW) and writes the file header.
 * Returns 0, or -1 with w->failed set (w->fd stays open when only the header's write failed). */
int cc__writer_open(cc__writer_t *w, int dir_fd, const char *name) {
    w->section_count = 0;
    w->failed = 0;
    w->error = 0;
    w->failed_step = 0;
    w->length = 0;
    w->out_length = 0;
    w->fd = cc__sys_openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (w->fd < 0) { cc__writer_fail(w, CC__STEP_CREATE); return -1; }
    cc_file_header_t h;
    /* No memset/memcpy from libc needed, but both are async-signal-safe in practice; keep
     * to plain stores so the contract is obvious. */
    unsigned char *raw = (unsigned char *)&h;
    for (size_t i = 0; i < sizeof h; i++) raw[i] = 0;
    for (int i = 0; i < 8; i++) h.magic[i] = CC_RECORD_MAGIC[i];
    h.version = CC_RECORD_VERSION;
    h.header_size = (uint16_t)sizeof h;
    h.arch = cc__arch_record_id;
    h.byte_order = 1;
    h.pointer_size = (uint8_t)sizeof(void *);
    h.header_crc = cc_crc32(0, &h, offsetof(cc_file_header_t, header_crc));
    if (cc__write_all(w->fd, &h, sizeof h) != 0) { cc__writer_fail(w, CC__STEP_WRITE); return -1; }
    return 0;
}

/* The most a section takes in `out`: its header, CC__SECTION_BUFFER bytes of payload, its CRC. */
#define CC__SECTION_MOST (sizeof(cc_section_header_t) + CC__SECTION_BUFFER + sizeof(uint32_t))
_Static_assert(CC__SECTION_MOST <= CC__OUT_BUFFER, "a whole section fits in the output buffer");

/* async-signal-safe: starts assembling a section at the end of `out` (see cc_internal.h), the
 * whole sections before it written first when a section of the largest size might not fit; the
 * header is filled in by cc__section_end. */
void cc__section_begin(cc__writer_t *w, uint32_t type) {
    if (w->out_length + CC__SECTION_MOST > sizeof w->out) cc__writer_flush(w);
    /* Still no room (a failed writer keeps what it could not write): assemble from the start,
     * which only a writer that writes nothing more can come to. */
    if (w->out_length + CC__SECTION_MOST > sizeof w->out) w->out_length = 0;
    w->type = type;
    w->length = 0;
}

/* async-signal-safe: appends payload bytes; what does not fit in CC__SECTION_BUFFER is dropped. */
void cc__section_put(cc__writer_t *w, const void *data, size_t len) {
    size_t room = CC__SECTION_BUFFER - w->length;
    if (len > room) len = room;
    const unsigned char *p = data;
    unsigned char *dst = w->out + w->out_length + sizeof(cc_section_header_t) + w->length;
    for (size_t i = 0; i < len; i++) dst[i] = p[i];
    w->length += len;
}

/* async-signal-safe. */
void cc__section_puts(cc__writer_t *w, const char *s) {
    cc__section_put(w, s, cc__strnlen(s, CC__SECTION_BUFFER));
}

/* async-signal-safe: writes the sections gathered so far with one write(2). The handler calls
 * it at checkpoints, before each step that could fault or stall, so a record cut short keeps
 * every section gathered before that step; between checkpoints, fewer syscalls. */
void cc__writer_flush(cc__writer_t *w) {
    if (w->failed || w->fd < 0 || w->out_length == 0) return;
    if (cc__write_all(w->fd, w->out, w->out_length) != 0) cc__writer_fail(w, CC__STEP_WRITE);
    w->out_length = 0;
}

/* async-signal-safe: header + payload + CRC, appended whole to the output buffer, so the file
 * only ever holds whole sections or a tail the reader recognises as torn. */
void cc__section_end(cc__writer_t *w) {
    if (w->failed || w->fd < 0) return;
    cc_section_header_t h = { .type = w->type, .length = (uint32_t)w->length };
    unsigned char *start = w->out + w->out_length;
    const unsigned char *hp = (const unsigned char *)&h;
    for (size_t i = 0; i < sizeof h; i++) start[i] = hp[i];
    size_t total = sizeof h + w->length;
    uint32_t crc = cc_crc32(0, start, total);
    const unsigned char *cp = (const unsigned char *)&crc;
    for (size_t i = 0; i < sizeof crc; i++) start[total + i] = cp[i];
    w->out_length += total + sizeof crc;
    w->section_count++;
}

/* async-signal-safe: one CC_SEC_STRING section. */
void cc__write_string(cc__writer_t *w, uint32_t key, const char *s, size_t len) {
    cc_sec_string_t head = { .key = key };
    cc__section_begin(w, CC_SEC_STRING);
    cc__section_put(w, &head, sizeof head);
    cc__section_put(w, s, len);
    cc__section_end(w);
}
