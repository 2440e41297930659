/* cc_images.c — loaded images from /proc/self/maps with their GNU build-ids, read without dl_iterate_phdr (async-signal-safe). */
#include "cc_boot.h"
#include "cc_internal.h"

#include <elf.h>
#include <link.h>
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/*
 * Why /proc/self/maps: dl_iterate_phdr takes the loader's lock, which a thread inside dlopen
 * may hold at the moment of the crash. Reading the maps file needs only open/read/close, and
 * the ELF headers and notes are copied with cc__safe_read, so a mapping that changed or went
 * away underneath us yields "no build-id" instead of a second fault.
 *
 * An image is a file whose first mapping has file offset 0 and starts with an ELF header; its
 * later mappings of the same path (with anonymous .bss mappings in between) extend its size.
 */

/*
 * Build-ids of the images loaded at install time are read once then (dl_iterate_phdr is fine
 * outside the handler) and kept by load address and a hash of the path: at crash time an image
 * found in this table (same address, same inode as /proc/self/maps shows) costs no memory
 * reads. Images loaded later (dlopen), or a different file now mapped at a cached address, are
 * read from memory as above.
 */
#define CC__CACHED_IMAGES 512
typedef struct {
    uint64_t base;
    uint64_t inode;
    uint32_t build_id_length;
    uint8_t build_id[32];
} cc__cached_image_t;
static cc__cached_image_t g_cache[CC__CACHED_IMAGES];
static uint32_t g_cache_count;

/* Install time: one entry per object dl_iterate_phdr reports. */
static int cc__cache_one(struct dl_phdr_info *info, size_t size, void *unused) {
    (void)size; (void)unused;
    if (g_cache_count >= CC__CACHED_IMAGES) return 1;
    uint64_t base = 0;
    int found = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_phdr[i].p_offset == 0) {
            base = info->dlpi_addr + (info->dlpi_phdr[i].p_vaddr & ~(uint64_t)0xFFF);
            found = 1;
            break;
        }
    }
    if (!found) return 0;
    const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : cc__g.executable_path;
    cc__cached_image_t *entry = &g_cache[g_cache_count];
    entry->base = base;
    struct stat st;
    if (stat(name, &st) != 0) return 0;
    entry->inode = (uint64_t)st.st_ino;
    entry->build_id_length = 0;
    /* Outside the handler the notes can be read in place: the loader mapped them. */
    for (int i = 0; i < info->dlpi_phnum && !entry->build_id_length; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const unsigned char *notes = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        size_t size = ph->p_memsz, off = 0;
        while (off + sizeof(ElfW(Nhdr)) <= size) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(notes + off);
            size_t name_off = off + sizeof *nh;
            size_t desc_off = name_off + ((nh->n_namesz + 3u) & ~3u);
            size_t next = desc_off + ((nh->n_descsz + 3u) & ~3u);
            if (next > size || next <= off) break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && notes[name_off] == 'G' &&
                notes[name_off + 1] == 'N' && notes[name_off + 2] == 'U' && nh->n_descsz > 0) {
                uint32_t len = nh->n_descsz > 32 ? 32 : nh->n_descsz;
                for (uint32_t k = 0; k < len; k++) entry->build_id[k] = notes[desc_off + k];
                entry->build_id_length = len;
                break;
            }
            off = next;
        }
    }
    g_cache_count++;
    return 0;
}

void cc__images_prepare(void) {
    g_cache_count = 0;
    dl_iterate_phdr(cc__cache_one, 0);
}

/* async-signal-safe: the cached build-id of the image at base backed by inode, or -1. */
static int cc__cached_build_id(uint64_t base, uint64_t inode, uint8_t out[32]) {
    for (uint32_t i = 0; i < g_cache_count; i++) {
        if (g_cache[i].base == base && g_cache[i].inode == inode && inode != 0) {
            for (uint32_t k = 0; k < g_cache[i].build_id_length; k++) out[k] = g_cache[i].build_id[k];
            return (int)g_cache[i].build_id_length;
        }
    }
    return -1;
}

typedef struct {
    uint64_t base;
    uint64_t end;
    uint64_t inode;
    int open;
    char path[CC__PATH_MAX];
    size_t path_length;
} cc__image_t;

static cc__image_t g_image;
static char g_maps_buffer[4096];
static char g_line[CC__PATH_MAX + 256];

/* async-signal-safe: parses hex digits at *p, advancing it. */
static uint64_t cc__parse_hex(const char **p, const char *end) {
    uint64_t v = 0;
    while (*p < end) {
        char c = **p;
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else break;
        v = (v << 4) | (uint64_t)d;
        (*p)++;
    }
    return v;
}

/* async-signal-safe: skips to the next space-separated field. */
static void cc__skip_field(const char **p, const char *end) {
    while (*p < end && **p != ' ') (*p)++;
    while (*p < end && **p == ' ') (*p)++;
}

/* async-signal-safe: finds the NT_GNU_BUILD_ID note of the ELF image mapped at base.
 * Returns its length (0 when there is none or anything looks wrong). */
static uint32_t cc__read_build_id(uint64_t base, uint8_t out[32]) {
    Elf64_Ehdr eh;
    if (cc__safe_read(base, &eh, sizeof eh) != sizeof eh) return 0;
    if (eh.e_ident[EI_MAG0] != ELFMAG0 || eh.e_ident[EI_MAG1] != ELFMAG1 ||
        eh.e_ident[EI_MAG2] != ELFMAG2 || eh.e_ident[EI_MAG3] != ELFMAG3 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64) return 0;
    if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 64) return 0;
    static Elf64_Phdr ph[64];
    size_t ph_bytes = (size_t)eh.e_phnum * sizeof(Elf64_Phdr);
    if (cc__safe_read(base + eh.e_phoff, ph, ph_bytes) != ph_bytes) return 0;
    /* Load bias: where vaddr 0 sits. The mapping at file offset 0 holds the first PT_LOAD. */
    uint64_t bias = 0;
    if (eh.e_type == ET_DYN) {
        for (int i = 0; i < eh.e_phnum; i++) {
            if (ph[i].p_type == PT_LOAD) { bias = base - (ph[i].p_vaddr & ~(uint64_t)0xFFF); break; }
        }
    }
    static unsigned char notes[2048];
    for (int i = 0; i < eh.e_phnum; i++) {
        if (ph[i].p_type != PT_NOTE) continue;
        size_t size = ph[i].p_memsz < sizeof notes ? (size_t)ph[i].p_memsz : sizeof notes;
        size_t got = cc__safe_read(bias + ph[i].p_vaddr, notes, size);
        size_t off = 0;
        while (off + sizeof(Elf64_Nhdr) <= got) {
            Elf64_Nhdr nh;
            unsigned char *np = (unsigned char *)&nh;
            for (size_t k = 0; k < sizeof nh; k++) np[k] = notes[off + k];
            size_t name_off = off + sizeof nh;
            size_t desc_off = name_off + ((nh.n_namesz + 3u) & ~3u);
            size_t next = desc_off + ((nh.n_descsz + 3u) & ~3u);
            if (nh.n_namesz > got || nh.n_descsz > got || next > got || next <= off) break;
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
                notes[name_off] == 'G' && notes[name_off + 1] == 'N' && notes[name_off + 2] == 'U' &&
                nh.n_descsz > 0) {
                uint32_t len = nh.n_descsz > 32 ? 32 : nh.n_descsz;
                for (uint32_t k = 0; k < len; k++) out[k] = notes[desc_off + k];
                return len;
            }
            off = next;
        }
    }
    return 0;
}

/* async-signal-safe: writes the open image, if it is an ELF image. */
static void cc__flush_image(cc__writer_t *w) {
    if (!g_image.open) return;
    g_image.open = 0;
    cc_sec_image_t img;
    unsigned char *raw = (unsigned char *)&img;
    for (size_t i = 0; i < sizeof img; i++) raw[i] = 0;
    int cached = cc__cached_build_id(g_image.base, g_image.inode, img.build_id);
    if (cached >= 0) {
        img.build_id_length = (uint32_t)cached;
    } else {
        unsigned char magic[4];
        if (cc__safe_read(g_image.base, magic, 4) != 4 || magic[0] != 0x7f || magic[1] != 'E' ||
            magic[2] != 'L' || magic[3] != 'F') return;
        img.build_id_length = cc__read_build_id(g_image.base, img.build_id);
    }
    img.base = g_image.base;
    img.size = g_image.end - g_image.base;
    g_image.path[g_image.path_length] = 0;
    if (cc__streq(g_image.path, cc__g.executable_path)) img.flags |= CC_IMAGE_MAIN_EXECUTABLE;
    cc__section_begin(w, CC_SEC_IMAGE);
    cc__section_put(w, &img, sizeof img);
    cc__section_put(w, g_image.path, g_image.path_length);
    cc__section_end(w);
}

/* async-signal-safe: one maps line "start-end perms offset dev inode   path". */
static void cc__image_line(cc__writer_t *w, const char *line, size_t len) {
    const char *p = line, *end = line + len;
    uint64_t start = cc__parse_hex(&p, end);
    if (p >= end || *p != '-') return;
    p++;
    uint64_t stop = cc__parse_hex(&p, end);
    cc__skip_field(&p, end);                 /* to perms */
    cc__skip_field(&p, end);                 /* to offset */
    uint64_t offset = cc__parse_hex(&p, end);
    cc__skip_field(&p, end);                 /* to dev */
    cc__skip_field(&p, end);                 /* to inode */
    uint64_t inode = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++) inode = inode * 10 + (uint64_t)(*p - '0');
    cc__skip_field(&p, end);                 /* to path (may be empty) */
    const char *path = p;
    size_t path_length = (size_t)(end - p);
    if (path_length == 0 || (path[0] != '/' && !(path_length == 6 && path[0] == '[' && path[1] == 'v'))) {
        return; /* anonymous, [heap], [stack]: not an image; [vdso] is kept */
    }
    int same_path = g_image.open && path_length == g_image.path_length;
    for (size_t i = 0; same_path && i < path_length; i++) same_path = path[i] == g_image.path[i];
    if (same_path && offset != 0) {
        if (stop > g_image.end) g_image.end = stop;
        return;
    }
    if (offset != 0) return;                  /* a later piece of some other file */
    cc__flush_image(w);
    if (path_length >= sizeof g_image.path) path_length = sizeof g_image.path - 1;
    for (size_t i = 0; i < path_length; i++) g_image.path[i] = path[i];
    g_image.path_length = path_length;
    g_image.base = start;
    g_image.end = stop;
    g_image.inode = inode;
    g_image.open = 1;
}

/* async-signal-safe: one CC_SEC_IMAGE per loaded ELF image. */
void cc__write_images(cc__writer_t *w) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    g_image.open = 0;
    size_t line_length = 0;
    int overlong = 0;
    for (;;) {
        ssize_t n = read(fd, g_maps_buffer, sizeof g_maps_buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (ssize_t i = 0; i < n; i++) {
            char c = g_maps_buffer[i];
            if (c == '\n') {
                if (!overlong) cc__image_line(w, g_line, line_length);
                line_length = 0;
                overlong = 0;
            } else if (line_length < sizeof g_line) {
                g_line[line_length++] = c;
            } else {
                overlong = 1;
            }
        }
    }
    close(fd);
    cc__flush_image(w);
}
