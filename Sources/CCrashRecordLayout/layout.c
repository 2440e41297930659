/* layout.c — CCrashRecordLayout: the record layout shared by the writer in CShims and the Swift
 * reader in CrashRecordFormat (include/cc_record.h), and the one function of its own, the
 * directory count a start runs (cc_record_directory_usage). */
#define _GNU_SOURCE
#include "cc_record.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* One entry as getdents64 returns it. */
struct layout_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static int layout_has_suffix(const char *name, size_t length, const char *suffix) {
    size_t n = strlen(suffix);
    return length >= n && memcmp(name + length - n, suffix, n) == 0;
}

static int layout_usage(int fd, uint64_t *records, uint64_t *bytes);

int cc_record_directory_usage(const char *directory, uint64_t *records, uint64_t *bytes) {
    *records = 0;
    *bytes = 0;
    int fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int result = layout_usage(fd, records, bytes);
    close(fd);
    return result;
}

int cc_record_directory_usage_fd(int fd, uint64_t *records, uint64_t *bytes) {
    *records = 0;
    *bytes = 0;
    if (lseek(fd, 0, SEEK_SET) != 0) return -1;
    return layout_usage(fd, records, bytes);
}

/* The listing of both: `fd` read from where its offset is. */
static int layout_usage(int fd, uint64_t *records, uint64_t *bytes) {
    const size_t prefix = strlen(CC_RECORD_PREFIX);
    char buffer[8192] __attribute__((aligned(8)));
    for (;;) {
        long got = syscall(SYS_getdents64, fd, buffer, sizeof buffer);
        if (got < 0) return -1;
        if (got == 0) break;
        for (long at = 0; at < got;) {
            const struct layout_dirent64 *entry = (const struct layout_dirent64 *)(buffer + at);
            at += entry->d_reclen;
            const char *name = entry->d_name;
            size_t length = strlen(name);
            int ours = length >= prefix && memcmp(name, CC_RECORD_PREFIX, prefix) == 0;
            if (!ours && strcmp(name, CC_RECORD_PRUNED_LEDGER) != 0) continue;
            if (ours && (layout_has_suffix(name, length, CC_RECORD_EXTENSION) || layout_has_suffix(name, length, CC_RECORD_PARTIAL_EXTENSION))) {
                *records += 1;
            }
            struct stat info;
            if (fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(info.st_mode)) *bytes += (uint64_t)info.st_size;
        }
    }
    return 0;
}
