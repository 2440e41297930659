/* cc_cfi.c — one step of a stack by the DWARF call-frame information every image carries (.eh_frame, found through .eh_frame_hdr), prepared by nothing. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <elf.h>
#include <link.h>
#include <stddef.h>

/*
 * Why our own. A crash handler may not load, allocate or lock, so an unwinder that needs any
 * of that must be made ready before the crash: libunwind was loaded and warmed up by
 * CrashHandler.start, ≈ 0.2 ms of every launch of every program, crash or not
 * (docs/decisions/capture-start.md). This one needs nothing before it is used: its only input
 * is the image table collected for the crash (cc_images.c) and the memory the images already
 * map, and its only state is the caller's static storage. What it reads:
 *
 * - the image holding the pc, and its PT_GNU_EH_FRAME segment (found in its program headers
 *   when the image table was made, install's or the crash's): .eh_frame_hdr, whose sorted
 *   table (initial location → FDE) is searched by halves (every linker writes it as datarel
 *   sdata4; an image without it is stepped by its frame record instead);
 * - the FDE and its CIE in .eh_frame (augmentations z, R, P, L, S, B, G as GCC, Clang and the
 *   kernel's vDSO write them);
 * - the CFA program: the CIE's initial instructions, then the FDE's up to the pc, every
 *   DW_CFA_* operation DWARF 5 defines (with remember/restore state to a depth of
 *   CC__CFI_STATES) and GCC's args_size, negative_offset_extended and aarch64's
 *   negate_ra_state;
 * - DWARF expressions, where a rule is one (PLT entries, glibc's signal trampoline, the
 *   vDSO's sigreturn): the stack machine of DWARF 5 §2.5.1 without the operations that name
 *   no value CFI can have (object, TLS, frame-base and typed operations).
 *
 * The tables are read where they are mapped, as any unwinder reads them: they belong to images
 * the table says are loaded. What a rule takes from the stack (saved registers, the caller's
 * frame) is read with cc__safe_read, so a damaged stack ends the walk instead of faulting.
 * Every loop is bounded by the bytes it walks.
 */

#define CC__CFI_STATES 8
#define CC__EXPR_STACK 64
#define CC__SAVED_SPAN 256

enum { RULE_SAME = 0, RULE_UNDEFINED, RULE_OFFSET, RULE_VAL_OFFSET, RULE_REGISTER, RULE_EXPRESSION, RULE_VAL_EXPRESSION };

typedef struct {
    uint8_t how;
    int64_t value;               /* the offset, or the other register */
    const uint8_t *expr;         /* RULE_*EXPRESSION: the block, and its length */
    uint64_t expr_length;
} cc__rule_t;

typedef struct {
    cc__rule_t rules[CC__CFI_REGS];
    uint64_t cfa_register;
    int64_t cfa_offset;
    const uint8_t *cfa_expr;     /* non-null: the CFA is this expression's value */
    uint64_t cfa_expr_length;
    int ra_signed;               /* aarch64: the return address was signed (negate_ra_state) */
} cc__row_t;

typedef struct {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_column;
    uint8_t fde_encoding;
    int signal_frame;            /* 'S': the caller's pc is where it was interrupted, not a return */
    int augmented;               /* 'z': FDEs carry augmentation data */
    const uint8_t *instructions, *end;
} cc__cie_t;

/* The scratch of one step: static, never on a stack (the handler runs on a small one). One per
 * unwinding thread: the handler's (crashed thread and parked threads) and the helper's. What
 * every step uses comes first and, page-aligned, fits one page (≈ 2.3 KiB on x86-64): the crash
 * faults in one page for it, not three; the remembered rows and the expression stack, which few
 * steps need, come after. */
struct cc__cfi {
    /* The last image looked up: its range and its .eh_frame_hdr (0: none). */
    uint64_t image_base, image_end, hdr;
    cc__row_t row, initial;
    uint64_t stack[CC__EXPR_STACK];
    cc__row_t saved[CC__CFI_STATES];
};

void cc__cfi_begin(cc__cfi_t *s) { s->image_end = 0; }

cc__cfi_t cc__cfi_recording __attribute__((aligned(4096))), cc__cfi_helper __attribute__((aligned(4096)));

/* --- reading encoded values -------------------------------------------------------------- */

typedef struct { const uint8_t *p, *end; int bad; } cc__bytes_t;

static uint8_t cc__u8(cc__bytes_t *b) {
    if (b->p >= b->end) { b->bad = 1; return 0; }
    return *b->p++;
}

static uint64_t cc__fixed(cc__bytes_t *b, int size) {
    if (b->end - b->p < size) { b->bad = 1; b->p = b->end; return 0; }
    uint64_t v = 0;
    for (int i = 0; i < size; i++) v |= (uint64_t)b->p[i] << (8 * i);
    b->p += size;
    return v;
}

static uint64_t cc__uleb(cc__bytes_t *b) {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
        uint8_t byte = cc__u8(b);
        if (b->bad) return 0;
        if (shift < 64) v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) return v;
    }
}

static int64_t cc__sleb(cc__bytes_t *b) {
    uint64_t v = 0;
    int shift = 0;
    uint8_t byte;
    do {
        byte = cc__u8(b);
        if (b->bad) return 0;
        if (shift < 64) v |= (uint64_t)(byte & 0x7f) << shift;
        shift += 7;
    } while (byte & 0x80);
    if (shift < 64 && (byte & 0x40)) v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* A pointer in DW_EH_PE encoding. `data_base` is what datarel is relative to (.eh_frame_hdr's
 * start in its table; none elsewhere). */
static uint64_t cc__encoded(cc__bytes_t *b, uint8_t encoding, uint64_t data_base) {
    if (encoding == 0xff) return 0;   /* DW_EH_PE_omit */
    uint64_t here = (uint64_t)(uintptr_t)b->p;
    uint64_t v;
    switch (encoding & 0x0f) {
    case 0x00: v = cc__fixed(b, 8); break;                                   /* absptr */
    case 0x01: v = cc__uleb(b); break;                                       /* uleb128 */
    case 0x02: v = cc__fixed(b, 2); break;                                   /* udata2 */
    case 0x03: v = cc__fixed(b, 4); break;                                   /* udata4 */
    case 0x04: v = cc__fixed(b, 8); break;                                   /* udata8 */
    case 0x09: v = (uint64_t)cc__sleb(b); break;                             /* sleb128 */
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)cc__fixed(b, 2); break;       /* sdata2 */
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)cc__fixed(b, 4); break;       /* sdata4 */
    case 0x0c: v = cc__fixed(b, 8); break;                                   /* sdata8 */
    default: b->bad = 1; return 0;
    }
    if (v == 0 && (encoding & 0x70) != 0x10) return 0;
    switch (encoding & 0x70) {
    case 0x00: break;                                                        /* absolute */
    case 0x10: v += here; break;                                             /* pcrel */
    case 0x30: if (!data_base) { b->bad = 1; return 0; } v += data_base; break; /* datarel */
    default: b->bad = 1; return 0;                                           /* textrel, funcrel, aligned */
    }
    if (encoding & 0x80) {                                                   /* indirect */
        uint64_t target = 0;
        if (cc__safe_read(v, &target, sizeof target) != sizeof target) { b->bad = 1; return 0; }
        v = target;
    }
    return v;
}

/* --- finding the FDE ------------------------------------------------------------------------ */

/* The .eh_frame_hdr of the image holding `pc` (0: no image, or one without it). */
static uint64_t cc__eh_frame_hdr(cc__cfi_t *s, uint64_t pc) {
    if (s->image_end && pc >= s->image_base && pc < s->image_end) return s->hdr;
    uint64_t base, end, bias, phdr, known;
    uint16_t phnum;
    if (!cc__images_find(pc, &base, &end, &bias, &phdr, &phnum, &known)) return 0;
    s->image_base = base;
    s->image_end = end;
    s->hdr = 0;
    /* Found when the image was collected (from the headers install or the collection read). */
    if (known) return s->hdr = known == CC__NO_EH_FRAME_HDR ? 0 : known;
    ElfW(Phdr) headers[32];
    if (phnum > 32) phnum = 32;
    size_t want = (size_t)phnum * sizeof headers[0];
    if (!phdr || cc__safe_read(phdr, headers, want) != want) return 0;
    for (uint16_t i = 0; i < phnum; i++)
        if (headers[i].p_type == PT_GNU_EH_FRAME) s->hdr = bias + headers[i].p_vaddr;
    return s->hdr;
}

/* The FDE whose range may hold `pc`, by halves over .eh_frame_hdr's table. 0 when none. */
static const uint8_t *cc__find_fde(uint64_t hdr, uint64_t pc) {
    const uint8_t *head = (const uint8_t *)(uintptr_t)hdr;
    if (head[0] != 1) return 0;
    /* Only the table every linker writes: fde_count present, entries datarel sdata4. */
    if (head[3] != 0x3b) return 0;
    cc__bytes_t b = { (const uint8_t *)(uintptr_t)hdr + 4, (const uint8_t *)(uintptr_t)hdr + 4 + 16, 0 };
    cc__encoded(&b, head[1], hdr);                  /* eh_frame_ptr: not needed */
    uint64_t count = cc__encoded(&b, head[2], hdr);
    if (b.bad || count == 0 || count > (1u << 28)) return 0;
    const int32_t *table = (const int32_t *)(uintptr_t)b.p;
    uint64_t lo = 0, hi = count;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (hdr + (uint64_t)(int64_t)table[2 * mid] <= pc) lo = mid; else hi = mid;
    }
    if (hdr + (uint64_t)(int64_t)table[2 * lo] > pc) return 0;
    return (const uint8_t *)(uintptr_t)(hdr + (uint64_t)(int64_t)table[2 * lo + 1]);
}

/* An entry of .eh_frame: its contents after the length, and where it ends. */
static int cc__entry(const uint8_t *at, cc__bytes_t *out) {
    cc__bytes_t b = { at, at + 12, 0 };
    uint64_t length = cc__fixed(&b, 4);
    if (length == 0xffffffffu) length = cc__fixed(&b, 8);
    if (b.bad || length == 0 || length > (1u << 24)) return 0;
    out->p = b.p;
    out->end = b.p + length;
    out->bad = 0;
    return 1;
}

static int cc__parse_cie(const uint8_t *at, cc__cie_t *cie) {
    cc__bytes_t b;
    if (!cc__entry(at, &b)) return 0;
    if (cc__fixed(&b, 4) != 0) return 0;         /* a CIE's id in .eh_frame */
    uint8_t version = cc__u8(&b);
    if (version != 1 && version != 3) return 0;
    const uint8_t *augmentation = b.p;
    while (cc__u8(&b) != 0 && !b.bad) {}
    cie->code_align = cc__uleb(&b);
    cie->data_align = cc__sleb(&b);
    cie->ra_column = version == 1 ? cc__u8(&b) : cc__uleb(&b);
    cie->fde_encoding = 0;
    cie->signal_frame = 0;
    cie->augmented = augmentation[0] == 'z';
    if (cie->augmented) {
        uint64_t length = cc__uleb(&b);
        if (b.bad || length > (uint64_t)(b.end - b.p)) return 0;
        const uint8_t *after = b.p + length;
        for (const uint8_t *a = augmentation + 1; *a && !b.bad; a++) {
            if (*a == 'R') cie->fde_encoding = cc__u8(&b);
            else if (*a == 'L') cc__u8(&b);
            else if (*a == 'P') cc__encoded(&b, cc__u8(&b) & 0x0f, 0);   /* the personality: skipped by its size */
            else if (*a == 'S') cie->signal_frame = 1;
            else if (*a == 'B' || *a == 'G') continue;
            else break;                              /* unknown: its data is skipped below */
        }
        b.p = after;
    } else if (augmentation[0] != 0) {
        return 0;
    }
    if (b.bad || cie->ra_column >= CC__CFI_REGS) return 0;
    cie->instructions = b.p;
    cie->end = b.end;
    return 1;
}

/* The FDE at `at`, if its range holds `pc`: its CIE, its instructions and its start. */
static int cc__parse_fde(const uint8_t *at, uint64_t pc, cc__cie_t *cie, cc__bytes_t *instructions, uint64_t *start) {
    cc__bytes_t b;
    if (!cc__entry(at, &b)) return 0;
    const uint8_t *id_at = b.p;
    uint64_t cie_offset = cc__fixed(&b, 4);
    if (b.bad || cie_offset == 0) return 0;
    if (!cc__parse_cie(id_at - cie_offset, cie)) return 0;
    uint64_t begin = cc__encoded(&b, cie->fde_encoding, 0);
    uint64_t range = cc__encoded(&b, cie->fde_encoding & 0x0f, 0);
    if (b.bad || pc < begin || pc - begin >= range) return 0;
    if (cie->augmented) {                            /* 'z': the FDE's augmentation data, skipped */
        uint64_t length = cc__uleb(&b);
        if (length > (uint64_t)(b.end - b.p)) return 0;
        b.p += length;
    }
    if (b.bad || b.p > b.end) return 0;
    *instructions = b;
    *start = begin;
    return 1;
}

/* --- the CFA program ------------------------------------------------------------------------ */

static void cc__set_rule(cc__row_t *row, uint64_t column, uint8_t how, int64_t value) {
    if (column >= CC__CFI_REGS) return;              /* a register we do not track (vector, SVE) */
    row->rules[column].how = how;
    row->rules[column].value = value;
    row->rules[column].expr = 0;
    row->rules[column].expr_length = 0;
}

/* Runs `program` up to (not past) `pc`, from the location `loc`. 0 on a malformed program. */
static int cc__run_cfa(cc__cfi_t *s, const cc__cie_t *cie, cc__bytes_t program, uint64_t loc, uint64_t pc) {
    cc__row_t *row = &s->row;
    int depth = 0;
    while (program.p < program.end && !program.bad) {
        uint8_t op = cc__u8(&program);
        uint8_t high = op & 0xc0, low = op & 0x3f;
        uint64_t reg, length;
        if (high == 0x40) {                                          /* advance_loc */
            loc += low * cie->code_align;
            if (loc > pc) return 1;
            continue;
        }
        if (high == 0x80) {                                          /* offset */
            cc__set_rule(row, low, RULE_OFFSET, (int64_t)cc__uleb(&program) * cie->data_align);
            continue;
        }
        if (high == 0xc0) {                                          /* restore */
            if (low < CC__CFI_REGS) row->rules[low] = s->initial.rules[low];
            continue;
        }
        switch (op) {
        case 0x00: break;                                            /* nop */
        case 0x01: loc = cc__encoded(&program, cie->fde_encoding, 0); if (loc > pc) return 1; break;
        case 0x02: loc += cc__fixed(&program, 1) * cie->code_align; if (loc > pc) return 1; break;
        case 0x03: loc += cc__fixed(&program, 2) * cie->code_align; if (loc > pc) return 1; break;
        case 0x04: loc += cc__fixed(&program, 4) * cie->code_align; if (loc > pc) return 1; break;
        case 0x05:                                                   /* offset_extended */
            reg = cc__uleb(&program);
            cc__set_rule(row, reg, RULE_OFFSET, (int64_t)cc__uleb(&program) * cie->data_align);
            break;
        case 0x06:                                                   /* restore_extended */
            reg = cc__uleb(&program);
            if (reg < CC__CFI_REGS) row->rules[reg] = s->initial.rules[reg];
            break;
        case 0x07: cc__set_rule(row, cc__uleb(&program), RULE_UNDEFINED, 0); break;
        case 0x08: cc__set_rule(row, cc__uleb(&program), RULE_SAME, 0); break;
        case 0x09:                                                   /* register */
            reg = cc__uleb(&program);
            cc__set_rule(row, reg, RULE_REGISTER, (int64_t)cc__uleb(&program));
            break;
        case 0x0a:                                                   /* remember_state */
            if (depth == CC__CFI_STATES) return 0;
            s->saved[depth++] = *row;
            break;
        case 0x0b:                                                   /* restore_state */
            if (depth == 0) return 0;
            {
                int ra_signed = row->ra_signed;              /* not part of the saved state */
                *row = s->saved[--depth];
                row->ra_signed = ra_signed;
            }
            break;
        case 0x0c:                                                   /* def_cfa */
            row->cfa_register = cc__uleb(&program);
            row->cfa_offset = (int64_t)cc__uleb(&program);
            row->cfa_expr = 0;
            break;
        case 0x0d: row->cfa_register = cc__uleb(&program); row->cfa_expr = 0; break;
        case 0x0e: row->cfa_offset = (int64_t)cc__uleb(&program); break;
        case 0x0f:                                                   /* def_cfa_expression */
            length = cc__uleb(&program);
            if (length > (uint64_t)(program.end - program.p)) return 0;
            row->cfa_expr = program.p;
            row->cfa_expr_length = length;
            program.p += length;
            break;
        case 0x10: case 0x16:                                        /* expression, val_expression */
            reg = cc__uleb(&program);
            length = cc__uleb(&program);
            if (length > (uint64_t)(program.end - program.p)) return 0;
            cc__set_rule(row, reg, op == 0x10 ? RULE_EXPRESSION : RULE_VAL_EXPRESSION, 0);
            if (reg < CC__CFI_REGS) { row->rules[reg].expr = program.p; row->rules[reg].expr_length = length; }
            program.p += length;
            break;
        case 0x11:                                                   /* offset_extended_sf */
            reg = cc__uleb(&program);
            cc__set_rule(row, reg, RULE_OFFSET, cc__sleb(&program) * cie->data_align);
            break;
        case 0x12:                                                   /* def_cfa_sf */
            row->cfa_register = cc__uleb(&program);
            row->cfa_offset = cc__sleb(&program) * cie->data_align;
            row->cfa_expr = 0;
            break;
        case 0x13: row->cfa_offset = cc__sleb(&program) * cie->data_align; break;
        case 0x14:                                                   /* val_offset */
            reg = cc__uleb(&program);
            cc__set_rule(row, reg, RULE_VAL_OFFSET, (int64_t)cc__uleb(&program) * cie->data_align);
            break;
        case 0x15:                                                   /* val_offset_sf */
            reg = cc__uleb(&program);
            cc__set_rule(row, reg, RULE_VAL_OFFSET, cc__sleb(&program) * cie->data_align);
            break;
        case 0x2d: row->ra_signed ^= 1; break;                       /* AARCH64_negate_ra_state / GNU_window_save */
        case 0x2e: cc__uleb(&program); break;                        /* GNU_args_size */
        case 0x2f:                                                   /* GNU_negative_offset_extended */
            reg = cc__uleb(&program);
            cc__set_rule(row, reg, RULE_OFFSET, -(int64_t)cc__uleb(&program) * cie->data_align);
            break;
        default: return 0;
        }
    }
    return !program.bad;
}

/* --- DWARF expressions ---------------------------------------------------------------------- */

/* The value of `expr` for `frame`, with `initial` pushed first when `push`. 0 when it cannot be
 * evaluated (a bad operation, a stack under- or overflow, an unreadable dereference). */
static int cc__evaluate(cc__cfi_t *s, const cc__cfi_frame_t *frame, const uint8_t *expr, uint64_t length,
                        int push, uint64_t initial, uint64_t *out) {
    uint64_t *st = s->stack;
    int n = 0;
    if (push) st[n++] = initial;
    cc__bytes_t b = { expr, expr + length, 0 };
    for (int steps = 0; b.p < b.end && !b.bad; steps++) {
        if (steps > 4096) return 0;
        uint8_t op = cc__u8(&b);
        uint64_t a, c;
        if (n >= CC__EXPR_STACK - 1) return 0;
        if (op >= 0x30 && op <= 0x4f) { st[n++] = op - 0x30; continue; }            /* lit */
        if (op >= 0x70 && op <= 0x8f) {                                              /* breg */
            if (op - 0x70 >= CC__CFI_REGS) return 0;
            st[n++] = frame->reg[op - 0x70] + (uint64_t)cc__sleb(&b);
            continue;
        }
        switch (op) {
        case 0x03: st[n++] = cc__fixed(&b, 8); break;                                /* addr */
        case 0x06: case 0x94: {                                                      /* deref, deref_size */
            if (n < 1) return 0;
            uint64_t size = op == 0x06 ? 8 : cc__fixed(&b, 1);
            if (size == 0 || size > 8) return 0;
            uint64_t value = 0;
            if (cc__safe_read(st[n - 1], &value, size) != size) return 0;
            st[n - 1] = value;
            break;
        }
        case 0x08: st[n++] = cc__fixed(&b, 1); break;
        case 0x09: st[n++] = (uint64_t)(int64_t)(int8_t)cc__fixed(&b, 1); break;
        case 0x0a: st[n++] = cc__fixed(&b, 2); break;
        case 0x0b: st[n++] = (uint64_t)(int64_t)(int16_t)cc__fixed(&b, 2); break;
        case 0x0c: st[n++] = cc__fixed(&b, 4); break;
        case 0x0d: st[n++] = (uint64_t)(int64_t)(int32_t)cc__fixed(&b, 4); break;
        case 0x0e: case 0x0f: st[n++] = cc__fixed(&b, 8); break;
        case 0x10: st[n++] = cc__uleb(&b); break;
        case 0x11: st[n++] = (uint64_t)cc__sleb(&b); break;
        case 0x12: if (n < 1) return 0; st[n] = st[n - 1]; n++; break;               /* dup */
        case 0x13: if (n < 1) return 0; n--; break;                                  /* drop */
        case 0x14: if (n < 2) return 0; st[n] = st[n - 2]; n++; break;               /* over */
        case 0x15: a = cc__fixed(&b, 1); if (a >= (uint64_t)n) return 0; st[n] = st[n - 1 - a]; n++; break;
        case 0x16: if (n < 2) return 0; a = st[n - 1]; st[n - 1] = st[n - 2]; st[n - 2] = a; break;
        case 0x17: if (n < 3) return 0;                                              /* rot */
            a = st[n - 1]; st[n - 1] = st[n - 2]; st[n - 2] = st[n - 3]; st[n - 3] = a; break;
        case 0x19: if (n < 1) return 0; if ((int64_t)st[n - 1] < 0) st[n - 1] = -st[n - 1]; break;
        case 0x1f: if (n < 1) return 0; st[n - 1] = -st[n - 1]; break;               /* neg */
        case 0x20: if (n < 1) return 0; st[n - 1] = ~st[n - 1]; break;               /* not */
        case 0x23: if (n < 1) return 0; st[n - 1] += cc__uleb(&b); break;            /* plus_uconst */
        case 0x1a: case 0x1b: case 0x1c: case 0x1d: case 0x1e: case 0x21: case 0x22: case 0x24:
        case 0x25: case 0x26: case 0x27: case 0x29: case 0x2a: case 0x2b: case 0x2c: case 0x2d: case 0x2e:
            if (n < 2) return 0;
            c = st[--n];        /* top */
            a = st[n - 1];      /* second */
            switch (op) {
            case 0x1a: a &= c; break;
            case 0x1b:                          /* div: INT64_MIN / -1 would trap (SIGFPE) */
                if (c == 0) return 0;
                a = (int64_t)c == -1 ? -a : (uint64_t)((int64_t)a / (int64_t)c);
                break;
            case 0x1c: a -= c; break;
            case 0x1d: if (c == 0) return 0; a %= c; break;
            case 0x1e: a *= c; break;
            case 0x21: a |= c; break;
            case 0x22: a += c; break;
            case 0x24: a = c >= 64 ? 0 : a << c; break;
            case 0x25: a = c >= 64 ? 0 : a >> c; break;
            case 0x26: a = c >= 64 ? ((int64_t)a < 0 ? ~(uint64_t)0 : 0) : (uint64_t)((int64_t)a >> c); break;
            case 0x27: a ^= c; break;
            case 0x29: a = (int64_t)a == (int64_t)c; break;
            case 0x2a: a = (int64_t)a >= (int64_t)c; break;
            case 0x2b: a = (int64_t)a > (int64_t)c; break;
            case 0x2c: a = (int64_t)a <= (int64_t)c; break;
            case 0x2d: a = (int64_t)a < (int64_t)c; break;
            case 0x2e: a = (int64_t)a != (int64_t)c; break;
            }
            st[n - 1] = a;
            break;
        case 0x28: case 0x2f: {                                                      /* bra, skip */
            int64_t offset = (int16_t)cc__fixed(&b, 2);
            int jump = 1;
            if (op == 0x28) { if (n < 1) return 0; jump = st[--n] != 0; }
            if (jump) {
                const uint8_t *to = b.p + offset;
                if (to < expr || to > expr + length) return 0;
                b.p = to;
            }
            break;
        }
        case 0x92: {                                                                 /* bregx */
            a = cc__uleb(&b);
            if (a >= CC__CFI_REGS) return 0;
            st[n++] = frame->reg[a] + (uint64_t)cc__sleb(&b);
            break;
        }
        case 0x96: break;                                                            /* nop */
        default: return 0;
        }
    }
    if (b.bad || n < 1) return 0;
    *out = st[n - 1];
    return 1;
}

/* --- one step ------------------------------------------------------------------------------- */

int cc__cfi_step(cc__cfi_t *s, cc__cfi_frame_t *frame, int exact, int *signal_frame) {
    uint64_t pc = exact ? frame->pc : frame->pc - 1;
    uint64_t hdr = cc__eh_frame_hdr(s, pc);
    if (!hdr) return CC__CFI_NO_INFO;
    const uint8_t *fde = cc__find_fde(hdr, pc);
    cc__cie_t cie;
    cc__bytes_t instructions;
    uint64_t start;
    if (!fde || !cc__parse_fde(fde, pc, &cie, &instructions, &start)) return CC__CFI_NO_INFO;

    /* The row at pc: every register the same, the CFA unset; the CIE's initial instructions,
     * which DW_CFA_restore returns to, then the FDE's. */
    cc__row_t *row = &s->row;
    for (int i = 0; i < CC__CFI_REGS; i++) cc__set_rule(row, (uint64_t)i, RULE_SAME, 0);
    row->cfa_register = CC__CFI_REGS;
    row->cfa_offset = 0;
    row->cfa_expr = 0;
    row->ra_signed = 0;
    cc__bytes_t initial = { cie.instructions, cie.end, 0 };
    if (!cc__run_cfa(s, &cie, initial, 0, UINT64_MAX)) return CC__CFI_BAD;
    s->initial = *row;
    if (!cc__run_cfa(s, &cie, instructions, start, pc)) return CC__CFI_BAD;

    uint64_t cfa;
    if (row->cfa_expr) {
        if (!cc__evaluate(s, frame, row->cfa_expr, row->cfa_expr_length, 0, 0, &cfa)) return CC__CFI_BAD;
    } else {
        if (row->cfa_register >= CC__CFI_REGS) return CC__CFI_BAD;
        cfa = frame->reg[row->cfa_register] + (uint64_t)row->cfa_offset;
    }

    /* The registers saved at offsets from the CFA (every one, in code a compiler wrote) lie
     * within a few words of each other: read in one go when they span at most CC__SAVED_SPAN
     * bytes, else one by one. */
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int i = 0; i < CC__CFI_REGS; i++) {
        if (row->rules[i].how != RULE_OFFSET) continue;
        if (row->rules[i].value < lo) lo = row->rules[i].value;
        if (row->rules[i].value > hi) hi = row->rules[i].value;
    }
    uint8_t saved[CC__SAVED_SPAN];
    int have_saved = 0;
    if (lo <= hi && (uint64_t)hi - (uint64_t)lo <= sizeof saved - 8) {   /* unsigned: no overflow */
        size_t span = (size_t)((uint64_t)hi - (uint64_t)lo) + 8;
        have_saved = cc__safe_read(cfa + (uint64_t)lo, saved, span) == span;
    }

    cc__cfi_frame_t caller = *frame;
    caller.reg[cc__arch_cfi_sp] = cfa;
    int ra_undefined = 0;
    for (int i = 0; i < CC__CFI_REGS; i++) {
        const cc__rule_t *rule = &row->rules[i];
        uint64_t value = 0, address = 0;
        switch (rule->how) {
        case RULE_SAME: continue;
        case RULE_UNDEFINED:
            if ((uint64_t)i == cie.ra_column) ra_undefined = 1;
            continue;
        case RULE_OFFSET:
            if (have_saved) {
                const uint8_t *at = saved + (rule->value - lo);
                for (int k = 0; k < 8; k++) value |= (uint64_t)at[k] << (8 * k);
                caller.reg[i] = value;
                continue;
            }
            address = cfa + (uint64_t)rule->value;
            break;
        case RULE_VAL_OFFSET: caller.reg[i] = cfa + (uint64_t)rule->value; continue;
        case RULE_REGISTER:
            if ((uint64_t)rule->value >= CC__CFI_REGS) return CC__CFI_BAD;
            caller.reg[i] = frame->reg[rule->value];
            continue;
        case RULE_EXPRESSION:
            if (!cc__evaluate(s, frame, rule->expr, rule->expr_length, 1, cfa, &address)) return CC__CFI_BAD;
            break;
        case RULE_VAL_EXPRESSION:
            if (!cc__evaluate(s, frame, rule->expr, rule->expr_length, 1, cfa, &value)) return CC__CFI_BAD;
            caller.reg[i] = value;
            continue;
        }
        if (cc__safe_read(address, &value, sizeof value) != sizeof value) return CC__CFI_BAD;
        caller.reg[i] = value;
    }
    if (ra_undefined) return CC__CFI_OUTERMOST;
    caller.pc = cc__strip_code_address(caller.reg[cie.ra_column]);
    *frame = caller;
    *signal_frame = cie.signal_frame;
    return CC__CFI_STEPPED;
}
