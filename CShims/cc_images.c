/* cc_images.c — loaded images from /proc/self/maps with their GNU build-ids, read without dl_iterate_phdr (async-signal-safe). */
#include "cc_boot.h"
#include "cc_internal.h"

#include <elf.h>
#include <link.h>
#include <sys/uio.h>
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
 * outside the handler) and kept by load address, with where the loader mapped the build-id
 * note and the note's bytes. Nothing at install tells whether the same file will still be at
 * that address at crash time (a dlclose, then a dlopen of another file there), and learning
 * each file's inode costs a stat() per image in every process that starts. So the handler
 * checks instead: the images /proc/self/maps shows at a cached address have their cached note
 * read back with ONE process_vm_readv (an iovec per image, cc__safe_readv) and compared byte
 * for byte; an image whose note still says the same is the file that was cached (same
 * build-id, hence the same program headers and load bias), and costs no further reads. One
 * that differs, or cannot be read, is read from memory as an image loaded after install.
 */
#define CC__CACHED_IMAGES 512
#define CC__NOTE_HEAD 16             /* Elf64_Nhdr and "GNU\0" */
typedef struct {
    uint64_t base;
    uint64_t bias;               /* dlpi_addr */
    const ElfW(Phdr) *phdr;      /* dlpi_phdr */
    uint16_t phnum;
    uint32_t build_id_length;
    uint8_t build_id[32];
    uint64_t note;               /* address of the NT_GNU_BUILD_ID note (0: none) */
    uint8_t note_bytes[CC__NOTE_HEAD + 32]; /* its header, name and first build_id_length bytes */
    uint8_t seen[CC__NOTE_HEAD + 32];       /* (handler) what is there now */
} cc__cached_image_t;
static cc__cached_image_t g_cache[CC__CACHED_IMAGES];
static uint32_t g_cache_count;
/* (handler) the one read of cc__check_cached: its ok flags, then its local iovecs and its remote
 * ones side by side in io (count of each), so that a few dozen images need one new page here. */
static struct {
    uint8_t ok[CC__CACHED_IMAGES];
    struct iovec io[2 * CC__CACHED_IMAGES];
} g_check;

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
    cc__cached_image_t *entry = &g_cache[g_cache_count];
    entry->base = base;
    entry->bias = info->dlpi_addr;
    entry->phdr = info->dlpi_phdr;
    entry->phnum = info->dlpi_phnum;
    entry->build_id_length = 0;
    entry->note = 0;
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
                /* The note as the handler will read it back: header and name (16 bytes, since
                 * n_namesz is 4), then the build-id. */
                for (uint32_t k = 0; k < CC__NOTE_HEAD + len; k++) entry->note_bytes[k] = notes[off + k];
                entry->note = (uint64_t)(uintptr_t)(notes + off);
                entry->build_id_length = len;
                break;
            }
            off = next;
        }
    }
    g_cache_count++;
    return 0;
}

/* Install time (not async-signal-safe: dl_iterate_phdr takes the loader lock): the build-id
 * cache the handler later checks and reads. */
void cc__images_prepare(void) {
    g_cache_count = 0;
    dl_iterate_phdr(cc__cache_one, 0);
}

/* async-signal-safe: the index + 1 of the install-time entry of the image at base, or 0. Only
 * entries with a build-id note can be checked at crash time; one without is read from memory. */
static uint32_t cc__cached(uint64_t base) {
    for (uint32_t i = 0; i < g_cache_count; i++) {
        if (g_cache[i].base == base) return g_cache[i].note ? i + 1 : 0;
    }
    return 0;
}

/* The images of this crash, collected once from /proc/self/maps by cc__images_collect: written
 * as CC_SEC_IMAGE sections and served to libunwind as dl_iterate_phdr's answer. */
typedef struct {
    uint64_t base;
    uint64_t end;
    uint64_t bias;
    uint64_t phdr;               /* address of the program headers in memory, 0 if unknown */
    uint16_t phnum;
    uint32_t build_id_length;
    uint8_t build_id[32];
    uint32_t path_offset;        /* into g_paths, NUL-terminated */
    uint32_t path_length;
    uint32_t cached;             /* index + 1 of its install-time entry, until checked (cc__check_cached) */
} cc__image_t;

static cc__image_t g_images[CC__MAX_IMAGES];
static uint32_t g_image_count;
static char g_paths[CC__MAX_IMAGES * 96];
static uint32_t g_paths_used;
static int g_open;               /* g_images[g_image_count] is being extended */
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
static uint32_t cc__read_build_id(uint64_t base, uint8_t out[32], cc__image_t *image) {
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
    image->bias = bias;
    image->phnum = eh.e_phnum;
    image->phdr = base + eh.e_phoff;
    for (int i = 0; i < eh.e_phnum; i++) if (ph[i].p_type == PT_PHDR) image->phdr = bias + ph[i].p_vaddr;
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

/* async-signal-safe: reads the build-id and program headers of the image from memory; 0 when it
 * is not an ELF image. */
static int cc__read_image(cc__image_t *image) {
    unsigned char magic[4];
    if (cc__safe_read(image->base, magic, 4) != 4 || magic[0] != 0x7f || magic[1] != 'E' ||
        magic[2] != 'L' || magic[3] != 'F') return 0;
    image->build_id_length = cc__read_build_id(image->base, image->build_id, image);
    return 1;
}

/* async-signal-safe: completes the open image and keeps it if it is an ELF image. One at an
 * address the install-time cache knows is kept as is, to be checked with the others in one read
 * once the maps are parsed (cc__check_cached). */
static void cc__close_image(void) {
    if (!g_open) return;
    g_open = 0;
    cc__image_t *image = &g_images[g_image_count];
    image->cached = cc__cached(image->base);
    if (!image->cached && !cc__read_image(image)) return;
    g_image_count++;
}

/* async-signal-safe: the images found at a cached address get their cached build-id note read
 * back, all with one process_vm_readv; where it reads the same bytes, the cached build-id and
 * program headers are theirs. Any other is read from memory, and dropped if it is not ELF. */
static void cc__check_cached(void) {
    uint32_t count = 0;
    for (uint32_t i = 0; i < g_image_count; i++) count += g_images[i].cached != 0;
    if (count == 0) return;
    struct iovec *local = g_check.io, *remote = g_check.io + count;
    for (uint32_t i = 0, k = 0; i < g_image_count; i++) {
        if (!g_images[i].cached) continue;
        cc__cached_image_t *entry = &g_cache[g_images[i].cached - 1];
        local[k].iov_base = entry->seen;
        local[k].iov_len = CC__NOTE_HEAD + entry->build_id_length;
        remote[k].iov_base = (void *)(uintptr_t)entry->note;
        remote[k].iov_len = CC__NOTE_HEAD + entry->build_id_length;
        k++;
    }
    cc__safe_readv(local, remote, g_check.ok, count);
    uint32_t kept = 0, checked = 0;
    for (uint32_t i = 0; i < g_image_count; i++) {
        cc__image_t *image = &g_images[i];
        if (image->cached) {
            const cc__cached_image_t *entry = &g_cache[image->cached - 1];
            int same = g_check.ok[checked++];
            for (uint32_t b = 0; same && b < CC__NOTE_HEAD + entry->build_id_length; b++) same = entry->seen[b] == entry->note_bytes[b];
            image->cached = 0;
            if (same) {
                image->build_id_length = entry->build_id_length;
                for (uint32_t b = 0; b < entry->build_id_length; b++) image->build_id[b] = entry->build_id[b];
                image->bias = entry->bias;
                image->phdr = (uint64_t)(uintptr_t)entry->phdr;
                image->phnum = entry->phnum;
            } else if (!cc__read_image(image)) {
                continue;                /* not an ELF image (any more): dropped */
            }
        }
        if (kept != i) {
            const unsigned char *from = (const unsigned char *)image;
            unsigned char *to = (unsigned char *)&g_images[kept];
            for (size_t b = 0; b < sizeof *image; b++) to[b] = from[b];
        }
        kept++;
    }
    g_image_count = kept;
}

/* async-signal-safe: one maps line "start-end perms offset dev inode   path". */
static void cc__image_line(const char *line, size_t len) {
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
    cc__skip_field(&p, end);                 /* to path (may be empty) */
    const char *path = p;
    size_t path_length = (size_t)(end - p);
    int vdso = path_length == 6 && path[0] == '[' && path[1] == 'v' && path[2] == 'd' && path[3] == 's' &&
               path[4] == 'o' && path[5] == ']';
    if (path_length == 0 || (path[0] != '/' && !vdso)) {
        return; /* anonymous, [heap], [stack], [vvar]: not an image; [vdso] is kept */
    }
    if (g_open) {
        cc__image_t *image = &g_images[g_image_count];
        int same_path = path_length == image->path_length;
        for (size_t i = 0; same_path && i < path_length; i++) same_path = path[i] == g_paths[image->path_offset + i];
        if (same_path && offset != 0) {
            if (stop > image->end) image->end = stop;
            return;
        }
    }
    if (offset != 0) return;                  /* a later piece of some other file */
    cc__close_image();
    if (g_image_count >= CC__MAX_IMAGES) return;
    if (g_paths_used + path_length + 1 > sizeof g_paths) path_length = 0;
    cc__image_t *image = &g_images[g_image_count];
    unsigned char *raw = (unsigned char *)image;
    for (size_t i = 0; i < sizeof *image; i++) raw[i] = 0;
    image->path_offset = g_paths_used;
    image->path_length = (uint32_t)path_length;
    for (size_t i = 0; i < path_length; i++) g_paths[g_paths_used + i] = path[i];
    g_paths[g_paths_used + path_length] = 0;
    g_paths_used += (uint32_t)path_length + 1;
    image->base = start;
    image->end = stop;
    g_open = 1;
}

/* async-signal-safe: the loaded ELF images, from /proc/self/maps. */
void cc__images_collect(void) {
    g_image_count = 0;
    g_paths_used = 0;
    g_open = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    size_t line_length = 0;
    int overlong = 0;
    for (;;) {
        ssize_t n = read(fd, g_maps_buffer, sizeof g_maps_buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (ssize_t i = 0; i < n; i++) {
            char c = g_maps_buffer[i];
            if (c == '\n') {
                if (!overlong) cc__image_line(g_line, line_length);
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
    cc__close_image();
    cc__check_cached();
}

/* async-signal-safe: one CC_SEC_IMAGE per collected image: the main executable's alone when
 * `main_only` (written right after the crashed thread, so a record cut short by a full disk or
 * RLIMIT_FSIZE can still be symbolicated), otherwise every other image. */
void cc__write_images(cc__writer_t *w, int main_only) {
    for (uint32_t i = 0; i < g_image_count; i++) {
        const cc__image_t *image = &g_images[i];
        int is_main = cc__streq(g_paths + image->path_offset, cc__g.executable_path);
        if (is_main != (main_only != 0)) continue;
        cc_sec_image_t img;
        unsigned char *raw = (unsigned char *)&img;
        for (size_t k = 0; k < sizeof img; k++) raw[k] = 0;
        img.base = image->base;
        img.size = image->end - image->base;
        img.build_id_length = image->build_id_length;
        for (uint32_t k = 0; k < image->build_id_length; k++) img.build_id[k] = image->build_id[k];
        if (is_main) img.flags |= CC_IMAGE_MAIN_EXECUTABLE;
        cc__section_begin(w, CC_SEC_IMAGE);
        cc__section_put(w, &img, sizeof img);
        cc__section_put(w, g_paths + image->path_offset, image->path_length);
        cc__section_end(w);
    }
}

/* async-signal-safe: dl_iterate_phdr's contract over the collected images, for libunwind while
 * the record is written (the real one takes the loader lock). */
int cc__images_iterate(int (*callback)(struct dl_phdr_info *, size_t, void *), void *data) {
    int result = 0;
    for (uint32_t i = 0; i < g_image_count && result == 0; i++) {
        const cc__image_t *image = &g_images[i];
        if (!image->phdr || image->phnum == 0) continue;
        struct dl_phdr_info info;
        unsigned char *raw = (unsigned char *)&info;
        for (size_t k = 0; k < sizeof info; k++) raw[k] = 0;
        info.dlpi_addr = (ElfW(Addr))image->bias;
        info.dlpi_name = g_paths + image->path_offset;
        info.dlpi_phdr = (const ElfW(Phdr) *)(uintptr_t)image->phdr;
        info.dlpi_phnum = image->phnum;
        info.dlpi_adds = g_image_count;
        result = callback(&info, sizeof info, data);
    }
    return result;
}

/* async-signal-safe: whether `address` lies in one of the images cc__images_collect found (a
 * plausibility check for code pointers read from memory, e.g. an async context's resume point). */
int cc__images_contains(uint64_t address) {
    for (uint32_t i = 0; i < g_image_count; i++) {
        if (address >= g_images[i].base && address < g_images[i].end) return 1;
    }
    return 0;
}

/* async-signal-safe: the crashed thread's frames named as the record's readers name them, for
 * the stderr summary (cc_summary.c); see cc_internal.h. The main executable is looked at first,
 * then the others in table order: the order cc__write_images writes them in. */
int cc__images_label(uint64_t address, const char **name, size_t *name_length, uint64_t *offset) {
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < g_image_count; i++) {
            const cc__image_t *image = &g_images[i];
            if (cc__streq(g_paths + image->path_offset, cc__g.executable_path) != (pass == 0)) continue;
            if (address < image->base || address - image->base >= image->end - image->base) continue;
            const char *path = g_paths + image->path_offset;
            size_t start = 0;
            for (size_t k = 0; k < image->path_length; k++) if (path[k] == '/') start = k + 1;
            *name = path + start;
            *name_length = image->path_length - start;
            *offset = address - image->base;
            return 1;
        }
    }
    return 0;
}
