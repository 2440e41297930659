/* cc_images.c — the loaded images with their GNU build-ids, for the handler: from the loader's
 * link map checked against what install saw, else from /proc/self/maps; never dl_iterate_phdr. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/uio.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/*
 * Why not dl_iterate_phdr at the crash: it takes the loader's lock, which a thread inside
 * dlopen may hold at that moment. What the handler reads instead is copied with the safe reads
 * (cc__safe_read, cc__safe_readv), so memory that changed or went away underneath us yields
 * "not that image" instead of a second fault.
 *
 * At install (ordinary code), dl_iterate_phdr gives every loaded object: where it is loaded,
 * its program headers, its build-id note, its extent and its name, kept in g_cache. Under the
 * same lock, the loader's link map (r_debug, found through the executable's DT_DEBUG as
 * debuggers find it) is walked, and each node is kept with what it said then (g_links).
 *
 * At the crash, ONE process_vm_readv (an iovec per node and per note) reads back r_debug's
 * first node, the head of every kept node and every kept build-id note. When all still say what
 * they said at install, the images are the ones install saw, at the same addresses: a dlclose
 * unlinks a node, a dlopen appends one, and another file at the same address has another note.
 * The table is then install's: ≈ 25 µs (most of it the process's first process_vm_readv, which
 * the memory windows would pay otherwise), where reading /proc/self/maps costs ≈ 115 and grows
 * with every mapping (Benchmarks/README.md, "The handler's time"). Up to CC__NEW_LINKS objects
 * appended since install (a program's own dlopen) are read node by node. Anything else (more
 * of them, a node that changed, a static program without a link map, objects in another
 * link-map namespace) and the table comes from /proc/self/maps, as it always could.
 *
 * An image's path is the name the loader opened it by (the executable's, /proc/self/exe's
 * target; [vdso] for the kernel's), whichever way the table was made, for every image install
 * saw or a node names: it may be a symbolic link to the path /proc/self/maps shows (a soname
 * link; /lib → /usr/lib on a merged /usr). An image only /proc/self/maps shows has the kernel's
 * path. An image ends at the end of its last file-backed page, as /proc/self/maps has it.
 */
#define CC__CACHED_IMAGES 512
#define CC__NOTE_HEAD 16             /* Elf64_Nhdr and "GNU\0" */
typedef struct {
    uint64_t base;
    uint64_t end;                /* the end of its last file-backed page */
    uint64_t bias;               /* dlpi_addr */
    const ElfW(Phdr) *phdr;      /* dlpi_phdr */
    uint16_t phnum;
    uint64_t eh_frame_hdr;       /* its .eh_frame_hdr (CC__NO_EH_FRAME_HDR: none) */
    uint32_t build_id_length;
    uint8_t build_id[32];
    uint64_t note;               /* address of the NT_GNU_BUILD_ID note (0: none) */
    uint8_t note_bytes[CC__NOTE_HEAD + 32]; /* its header, name and first build_id_length bytes */
    uint8_t seen[CC__NOTE_HEAD + 32];       /* (handler) what is there now */
    uint64_t name;               /* dlpi_name: the loader's string, its link map node's l_name */
    const char *path;            /* the path recorded: in g_cache_paths, or the executable's */
    uint32_t path_length;
} cc__cached_image_t;
static cc__cached_image_t g_cache[CC__CACHED_IMAGES];
static uint32_t g_cache_count;
static char g_cache_paths[CC__CACHED_IMAGES * 96];
static uint32_t g_cache_paths_used;

/* The loader's link map as install saw it, in its order: each node's address, its head (struct
 * link_map's public first words) and its object's g_cache entry (index + 1; 0 for an object that
 * is no image, e.g. without a mapping at file offset 0). */
#define CC__LINKS_MAX 480            /* 1 + nodes + notes iovecs stay within UIO_MAXIOV (1024) */
#define CC__NEW_LINKS 8              /* objects appended since install read node by node */
typedef struct {
    uint64_t addr, name, ld, next;   /* l_addr, l_name, l_ld, l_next */
} cc__link_head_t;
typedef struct {
    uint64_t node;
    cc__link_head_t head;
    uint32_t cached;
    cc__link_head_t now;             /* (handler) the head as the crash reads it back */
} cc__link_t;
static cc__link_t g_links[CC__LINKS_MAX];
static uint32_t g_link_count;
static uint64_t g_r_map;             /* the address of r_debug.r_map; 0: the link map is not used */
static uint64_t g_page_size;
/* (handler) What the crash collects the image table with, on one page: each page the handler
 * touches first costs a page fault (≈ 1.5–2 µs on the project's VM), and small statics spread
 * between large arrays each took one. The one read of cc__images_from_links (r_debug.r_map now;
 * each node's head now goes beside it in g_links), its ok flags, and its local iovecs and remote
 * ones side by side; the table's counts. */
static struct {
    uint64_t r_map_now;
    uint32_t image_count;        /* g_images in use */
    uint32_t paths_used;         /* g_paths in use */
    int open;                    /* g_images[image_count] is being extended */
    uint8_t ok[1 + CC__LINKS_MAX + CC__CACHED_IMAGES];
    struct iovec io[2 * (1 + CC__LINKS_MAX + CC__CACHED_IMAGES)];
} g_check __attribute__((aligned(4096)));

/* async-signal-safe: where an object loaded at `bias` has its .eh_frame_hdr (PT_GNU_EH_FRAME), by
 * its program headers; CC__NO_EH_FRAME_HDR when it has none. Kept with each image, so that the
 * unwinder finds its tables without reading the headers again at the crash. */
static uint64_t cc__eh_frame_hdr_of(uint64_t bias, const ElfW(Phdr) *ph, int count) {
    for (int i = 0; i < count; i++) if (ph[i].p_type == PT_GNU_EH_FRAME) return bias + ph[i].p_vaddr;
    return CC__NO_EH_FRAME_HDR;
}

/* The end of the last file-backed page of an object's PT_LOAD segments, loaded at `bias`. */
static uint64_t cc__segments_end(uint64_t bias, const ElfW(Phdr) *ph, int count) {
    uint64_t end = 0, page = g_page_size ? g_page_size : 4096;
    for (int i = 0; i < count; i++) {
        if (ph[i].p_type != PT_LOAD) continue;
        uint64_t stop = (bias + ph[i].p_vaddr + ph[i].p_filesz + page - 1) & ~(page - 1);
        if (stop > end) end = stop;
    }
    return end;
}

/* Install time, inside dl_iterate_phdr (the loader's list cannot change meanwhile): the link map
 * r_debug leads to, from the executable's DT_DEBUG entry; none for a static program. */
static void cc__walk_links(struct dl_phdr_info *info) {
    uint64_t r_debug = 0;
    for (int i = 0; i < info->dlpi_phnum && !r_debug; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
        const ElfW(Dyn) *dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        for (; dyn->d_tag != DT_NULL; dyn++) {
            if (dyn->d_tag == DT_DEBUG) { r_debug = (uint64_t)dyn->d_un.d_ptr; break; }
        }
    }
    if (!r_debug) return;
    const struct r_debug *debug = (const struct r_debug *)(uintptr_t)r_debug;
    for (const struct link_map *node = debug->r_map; node; node = node->l_next) {
        if (g_link_count == CC__LINKS_MAX) { g_link_count = 0; return; }
        cc__link_t *link = &g_links[g_link_count++];
        link->node = (uint64_t)(uintptr_t)node;
        link->head.addr = (uint64_t)node->l_addr;
        link->head.name = (uint64_t)(uintptr_t)node->l_name;
        link->head.ld = (uint64_t)(uintptr_t)node->l_ld;
        link->head.next = (uint64_t)(uintptr_t)node->l_next;
        link->cached = 0;
    }
    g_r_map = (uint64_t)(uintptr_t)&debug->r_map;
}

/* Install time: one entry per object dl_iterate_phdr reports. */
static int cc__cache_one(struct dl_phdr_info *info, size_t size, void *calls) {
    (void)size;
    int first = (*(int *)calls)++ == 0;   /* the executable: the loader's first object */
    if (first) cc__walk_links(info);
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
    entry->end = cc__segments_end(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum);
    entry->bias = info->dlpi_addr;
    entry->phdr = info->dlpi_phdr;
    entry->phnum = info->dlpi_phnum;
    entry->eh_frame_hdr = cc__eh_frame_hdr_of(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum);
    entry->build_id_length = 0;
    entry->note = 0;
    entry->name = (uint64_t)(uintptr_t)info->dlpi_name;
    /* The path: the executable's (the loader names it ""), the kernel's name for its vDSO (the
     * loader calls it linux-vdso.so.1), or the loader's. */
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    if (base == (uint64_t)getauxval(AT_SYSINFO_EHDR)) name = "[vdso]";
    if (first && !name[0]) {
        entry->path = cc__g.executable_path;
        entry->path_length = (uint32_t)cc__strnlen(cc__g.executable_path, sizeof cc__g.executable_path);
    } else {
        size_t length = cc__strnlen(name, CC__PATH_MAX);
        if (g_cache_paths_used + length + 1 > sizeof g_cache_paths) length = 0;
        entry->path = g_cache_paths + g_cache_paths_used;
        entry->path_length = (uint32_t)length;
        for (size_t k = 0; k < length; k++) g_cache_paths[g_cache_paths_used + k] = name[k];
        g_cache_paths[g_cache_paths_used + length] = 0;
        g_cache_paths_used += (uint32_t)length + 1;
    }
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

/* Install time (not async-signal-safe: dl_iterate_phdr takes the loader lock): the images the
 * handler later checks, and the link map nodes it checks them by. The link map is used only
 * when it and dl_iterate_phdr agree: every node's object is the entry in the same place, and
 * every entry has its node (objects in another namespace have none here). */
void cc__images_prepare(void) {
    g_cache_count = 0;
    g_cache_paths_used = 0;
    g_link_count = 0;
    g_r_map = 0;
    g_page_size = (uint64_t)getauxval(AT_PAGESZ);
    int calls = 0;
    dl_iterate_phdr(cc__cache_one, &calls);
    uint32_t matched = 0;
    for (uint32_t i = 0, next = 0; i < g_link_count; i++) {
        cc__link_t *link = &g_links[i];
        if (next < g_cache_count && g_cache[next].bias == link->head.addr && g_cache[next].name == link->head.name) {
            link->cached = ++next;
            matched++;
        }
    }
    if (g_link_count == 0 || matched != g_cache_count) g_r_map = 0;
}

/* async-signal-safe: whether an entry's build-id note, as just read back into `seen`, is the one
 * install read. */
static int cc__note_unchanged(const cc__cached_image_t *entry) {
    for (uint32_t b = 0; b < CC__NOTE_HEAD + entry->build_id_length; b++) {
        if (entry->seen[b] != entry->note_bytes[b]) return 0;
    }
    return 1;
}

/* async-signal-safe: the index + 1 of the install-time entry of the image at base, or 0. Only
 * entries with a build-id note can be checked at crash time; one without is read from memory. */
static uint32_t cc__cached(uint64_t base) {
    for (uint32_t i = 0; i < g_cache_count; i++) {
        if (g_cache[i].base == base) return g_cache[i].note ? i + 1 : 0;
    }
    return 0;
}

/* The images of this crash, collected once by cc__images_collect: written as CC_SEC_IMAGE
 * sections and searched by the unwinder for each frame's call-frame information. */
typedef struct {
    uint64_t base;
    uint64_t end;
    uint64_t bias;
    uint64_t phdr;               /* address of the program headers in memory, 0 if unknown */
    uint16_t phnum;
    uint64_t eh_frame_hdr;       /* its .eh_frame_hdr, CC__NO_EH_FRAME_HDR when it has none, 0 if unknown */
    uint32_t build_id_length;
    uint8_t build_id[32];
    const char *path;            /* NUL-terminated: in g_paths or an install-time entry's */
    uint32_t path_length;
    uint32_t cached;             /* index + 1 of its install-time entry, until checked (cc__check_cached) */
} cc__image_t;

static cc__image_t g_images[CC__MAX_IMAGES];   /* g_check.image_count of them */
static char g_paths[CC__MAX_IMAGES * 96];      /* g_check.paths_used bytes */
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
    if (!image->end) image->end = cc__segments_end(bias, ph, eh.e_phnum);
    image->phnum = eh.e_phnum;
    image->phdr = base + eh.e_phoff;
    for (int i = 0; i < eh.e_phnum; i++) if (ph[i].p_type == PT_PHDR) image->phdr = bias + ph[i].p_vaddr;
    image->eh_frame_hdr = cc__eh_frame_hdr_of(bias, ph, eh.e_phnum);
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
    if (!g_check.open) return;
    g_check.open = 0;
    cc__image_t *image = &g_images[g_check.image_count];
    image->cached = cc__cached(image->base);
    if (!image->cached && !cc__read_image(image)) return;
    g_check.image_count++;
}

/* async-signal-safe: the images found at a cached address get their cached build-id note read
 * back, all with one process_vm_readv; where it reads the same bytes, the cached build-id and
 * program headers are theirs. Any other is read from memory, and dropped if it is not ELF. */
static void cc__check_cached(void) {
    uint32_t count = 0;
    for (uint32_t i = 0; i < g_check.image_count; i++) count += g_images[i].cached != 0;
    if (count == 0) return;
    struct iovec *local = g_check.io, *remote = g_check.io + count;
    for (uint32_t i = 0, k = 0; i < g_check.image_count; i++) {
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
    for (uint32_t i = 0; i < g_check.image_count; i++) {
        cc__image_t *image = &g_images[i];
        if (image->cached) {
            const cc__cached_image_t *entry = &g_cache[image->cached - 1];
            int same = g_check.ok[checked++] && cc__note_unchanged(entry);
            image->cached = 0;
            if (same) {
                image->build_id_length = entry->build_id_length;
                for (uint32_t b = 0; b < entry->build_id_length; b++) image->build_id[b] = entry->build_id[b];
                image->bias = entry->bias;
                image->phdr = (uint64_t)(uintptr_t)entry->phdr;
                image->phnum = entry->phnum;
                image->eh_frame_hdr = entry->eh_frame_hdr;
                if (entry->path_length && !(cc__g.flags & CC_FLAG_TEST_IMAGES_FROM_MAPS)) {
                    image->path = entry->path;
                    image->path_length = entry->path_length;
                }
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
    g_check.image_count = kept;
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
    if (g_check.open) {
        cc__image_t *image = &g_images[g_check.image_count];
        int same_path = path_length == image->path_length;
        for (size_t i = 0; same_path && i < path_length; i++) same_path = path[i] == image->path[i];
        if (same_path && offset != 0) {
            if (stop > image->end) image->end = stop;
            return;
        }
    }
    if (offset != 0) return;                  /* a later piece of some other file */
    cc__close_image();
    if (g_check.image_count >= CC__MAX_IMAGES) return;
    if (g_check.paths_used + path_length + 1 > sizeof g_paths) path_length = 0;
    cc__image_t *image = &g_images[g_check.image_count];
    unsigned char *raw = (unsigned char *)image;
    for (size_t i = 0; i < sizeof *image; i++) raw[i] = 0;
    image->path = g_paths + g_check.paths_used;
    image->path_length = (uint32_t)path_length;
    for (size_t i = 0; i < path_length; i++) g_paths[g_check.paths_used + i] = path[i];
    g_paths[g_check.paths_used + path_length] = 0;
    g_check.paths_used += (uint32_t)path_length + 1;
    image->base = start;
    image->end = stop;
    g_check.open = 1;
}

/* async-signal-safe: the loaded ELF images, from /proc/self/maps. */
static void cc__images_from_maps(void) {
    g_check.image_count = 0;
    g_check.paths_used = 0;
    g_check.open = 0;
    int fd = cc__sys_open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    size_t line_length = 0;
    int overlong = 0;
    for (;;) {
        ssize_t n = cc__sys_read(fd, g_maps_buffer, sizeof g_maps_buffer);
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
    cc__sys_close(fd);
    cc__close_image();
    cc__check_cached();
}

/* async-signal-safe: an object appended to the link map since install, from its node's head: its
 * name, and its headers and build-id read where the loader put them. 0 when it cannot be read as
 * an image loaded at l_addr (the table then comes from /proc/self/maps). */
static int cc__image_from_link(const cc__link_head_t *head) {
    if (g_check.image_count >= CC__MAX_IMAGES || g_check.paths_used + 2 > sizeof g_paths) return 0;
    cc__image_t *image = &g_images[g_check.image_count];
    unsigned char *raw = (unsigned char *)image;
    for (size_t i = 0; i < sizeof *image; i++) raw[i] = 0;
    size_t room = sizeof g_paths - g_check.paths_used - 1;
    if (room > 512) room = 512;
    size_t got = cc__safe_read(head->name, g_paths + g_check.paths_used, room);
    size_t length = cc__strnlen(g_paths + g_check.paths_used, got);
    if (length == 0 || length == got) return 0;          /* no name, or none that ends here */
    image->path = g_paths + g_check.paths_used;
    image->path_length = (uint32_t)length;
    g_check.paths_used += (uint32_t)length + 1;
    image->base = head->addr;
    if (!cc__read_image(image) || image->bias != head->addr) return 0;
    g_check.image_count++;
    return 1;
}

/* async-signal-safe: the images as install saw them, when one read shows the link map and the
 * build-id notes unchanged (see the top of this file); objects appended since, up to
 * CC__NEW_LINKS, read from their nodes. 0: the table must come from /proc/self/maps. */
static int cc__images_from_links(void) {
    if (!g_r_map || g_link_count == 0 || (cc__g.flags & CC_FLAG_TEST_IMAGES_FROM_MAPS)) return 0;
    struct iovec *local = g_check.io, *remote = g_check.io + 1 + g_link_count + g_cache_count;
    uint32_t n = 0;
    local[n].iov_base = &g_check.r_map_now;
    local[n].iov_len = sizeof g_check.r_map_now;
    remote[n].iov_base = (void *)(uintptr_t)g_r_map;
    remote[n++].iov_len = sizeof g_check.r_map_now;
    for (uint32_t i = 0; i < g_link_count; i++, n++) {
        local[n].iov_base = &g_links[i].now;
        local[n].iov_len = sizeof g_links[i].now;
        remote[n].iov_base = (void *)(uintptr_t)g_links[i].node;
        remote[n].iov_len = sizeof g_links[i].now;
    }
    for (uint32_t i = 0; i < g_cache_count; i++) {
        cc__cached_image_t *entry = &g_cache[i];
        if (!entry->note) continue;
        local[n].iov_base = entry->seen;
        local[n].iov_len = CC__NOTE_HEAD + entry->build_id_length;
        remote[n].iov_base = (void *)(uintptr_t)entry->note;
        remote[n++].iov_len = CC__NOTE_HEAD + entry->build_id_length;
    }
    CC__MARK("links_setup");
    cc__safe_readv(local, remote, g_check.ok, n);
    CC__MARK("links_readv");
    for (uint32_t i = 0; i < n; i++) if (!g_check.ok[i]) return 0;
    if (g_check.r_map_now != g_links[0].node) return 0;
    for (uint32_t i = 0; i < g_link_count; i++) {
        const cc__link_head_t *was = &g_links[i].head, *now = &g_links[i].now;
        if (now->addr != was->addr || now->name != was->name || now->ld != was->ld) return 0;
        if (i + 1 < g_link_count && now->next != g_links[i + 1].node) return 0;
    }
    for (uint32_t i = 0; i < g_cache_count; i++) {
        if (g_cache[i].note && !cc__note_unchanged(&g_cache[i])) return 0;
    }
    g_check.image_count = 0;
    g_check.paths_used = 0;
    for (uint32_t i = 0; i < g_link_count; i++) {
        if (!g_links[i].cached) continue;
        const cc__cached_image_t *entry = &g_cache[g_links[i].cached - 1];
        cc__image_t *image = &g_images[g_check.image_count++];
        image->base = entry->base;
        image->end = entry->end;
        image->bias = entry->bias;
        image->phdr = (uint64_t)(uintptr_t)entry->phdr;
        image->phnum = entry->phnum;
        image->eh_frame_hdr = entry->eh_frame_hdr;
        image->build_id_length = entry->build_id_length;
        for (uint32_t b = 0; b < entry->build_id_length; b++) image->build_id[b] = entry->build_id[b];
        image->path = entry->path;
        image->path_length = entry->path_length;
        image->cached = 0;
    }
    /* Objects appended since install: the last node's l_next was 0 then. */
    uint64_t node = g_links[g_link_count - 1].now.next;
    for (uint32_t added = 0; node; added++) {
        cc__link_head_t head;
        if (added == CC__NEW_LINKS || cc__safe_read(node, &head, sizeof head) != sizeof head) return 0;
        if (!cc__image_from_link(&head)) return 0;
        node = head.next;
    }
    return 1;
}

/* async-signal-safe: the loaded ELF images, from the link map when it is unchanged enough, else
 * from /proc/self/maps. */
void cc__images_collect(void) {
    if (!cc__images_from_links()) cc__images_from_maps();
}

/* async-signal-safe: one CC_SEC_IMAGE per collected image: the main executable's alone when
 * `main_only` (written right after the crashed thread, so a record cut short by a full disk or
 * RLIMIT_FSIZE can still be symbolicated), otherwise every other image. */
void cc__write_images(cc__writer_t *w, int main_only) {
    for (uint32_t i = 0; i < g_check.image_count; i++) {
        const cc__image_t *image = &g_images[i];
        int is_main = cc__streq(image->path, cc__g.executable_path);
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
        cc__section_put(w, image->path, image->path_length);
        cc__section_end(w);
    }
}

/* async-signal-safe: the collected image holding `address`: its range, load bias and program
 * headers (for the unwinder, cc_cfi.c). 0 when none holds it. */
int cc__images_find(uint64_t address, uint64_t *base, uint64_t *end, uint64_t *bias, uint64_t *phdr, uint16_t *phnum,
                    uint64_t *eh_frame_hdr) {
    for (uint32_t i = 0; i < g_check.image_count; i++) {
        const cc__image_t *image = &g_images[i];
        if (address < image->base || address >= image->end) continue;
        *base = image->base;
        *end = image->end;
        *bias = image->bias;
        *phdr = image->phdr;
        *phnum = image->phnum;
        *eh_frame_hdr = image->eh_frame_hdr;
        return 1;
    }
    return 0;
}

/* async-signal-safe: whether `address` lies in one of the images cc__images_collect found (a
 * plausibility check for code pointers read from memory, e.g. an async context's resume point). */
int cc__images_contains(uint64_t address) {
    for (uint32_t i = 0; i < g_check.image_count; i++) {
        if (address >= g_images[i].base && address < g_images[i].end) return 1;
    }
    return 0;
}

/* async-signal-safe: whether `address` lies in the main executable's image. */
int cc__images_in_main(uint64_t address) {
    for (uint32_t i = 0; i < g_check.image_count; i++) {
        const cc__image_t *image = &g_images[i];
        if (cc__streq(image->path, cc__g.executable_path) && address >= image->base && address < image->end) return 1;
    }
    return 0;
}

/* async-signal-safe: the crashed thread's frames named as the record's readers name them, for
 * the stderr summary (cc_summary.c); see cc_internal.h. The main executable is looked at first,
 * then the others in table order: the order cc__write_images writes them in. */
int cc__images_label(uint64_t address, const char **name, size_t *name_length, uint64_t *offset) {
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < g_check.image_count; i++) {
            const cc__image_t *image = &g_images[i];
            if (cc__streq(image->path, cc__g.executable_path) != (pass == 0)) continue;
            if (address < image->base || address - image->base >= image->end - image->base) continue;
            const char *path = image->path;
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
