/* cc_async.c — Swift async context chains read at crash time as raw words, for a reader to turn into async frames offline. */
#include "cc_boot.h"
#include "cc_internal.h"
#include "cc_swift_abi.h"

/*
 * What a Swift backtrace shows after the first async frame is not on the machine stack: an
 * async function's callers are suspended, and what links them is a chain of AsyncContext
 * objects on the heap (Parent, ResumeParent). An async partial function keeps its own context
 * in the word below its frame record (fp - 8), and receives it in the async context register
 * (r14 / x22). cc_swift_abi.h (2 and 3) says what is assumed of these layouts and of tasks, and
 * where it comes from.
 *
 * Whether a frame is an async function is known only by its symbol (on Linux a mangled suffix
 * TY<n>_ or TQ<n>_), and the handler looks up no symbols. So for every frame of the thread the
 * word at fp - 8 is taken as a candidate context (and, for frame 0, the context register), and a
 * candidate that looks like a context — non-zero, 16-byte aligned (AsyncContext is
 * alignas(16)), both words readable, its ResumeParent inside a loaded image — is followed
 * Parent by Parent, recording (context, Parent, ResumeParent) links. Each chain stops at a Parent of 0
 * (the task's first context), an unreadable or misaligned context, a context already seen (a
 * cycle, or another chain of this thread: then it says where it joins), a ResumeParent outside
 * every image, or the link budget. A reader keeps only the chain of the first frame that the
 * symbols say is async (CrashSymbolication's AsyncFrames). Reads go through cc__safe_read, so
 * a wrong guess costs a few syscalls and bytes, never a fault, a hang or a changed death.
 *
 * Another layout than cc_swift_abi.h's shows as chains that end early (UNREADABLE, MISALIGNED,
 * NOT_CODE) and resume points the symbols do not name as async functions; a reader then shows
 * the physical frames only.
 */

#define CC__ASYNC_SEEN_MAX 512   /* contexts remembered per thread, to tell cycles and joins */

static uint64_t g_seen[CC__ASYNC_SEEN_MAX];
static uint32_t g_seen_count;
static cc_async_link_t g_links[CC__ASYNC_SEEN_MAX];

/* async-signal-safe: the index among the contexts seen in this thread, or -1. */
static int cc__seen(uint64_t context) {
    for (uint32_t i = 0; i < g_seen_count; i++) if (g_seen[i] == context) return (int)i;
    return -1;
}

/* async-signal-safe: whether a word read as a ResumeParent can be one: code of a loaded image. */
static int cc__is_resume_point(uint64_t resume) {
    return resume != 0 && cc__images_contains(resume);
}

/* async-signal-safe: a context's two words, if it is aligned and both can be read. */
static uint32_t cc__read_context(uint64_t context, uint64_t *parent, uint64_t *resume) {
    if (context == 0) return CC_ASYNC_END_PARENT_NULL;
    if (context & (CC__SWIFT_CONTEXT_ALIGN - 1)) return CC_ASYNC_END_MISALIGNED;
    cc__swift_async_context_t words;
    if (cc__safe_read(context, &words, sizeof words) != sizeof words) return CC_ASYNC_END_UNREADABLE;
    /* A resume point is a code address: stripped of any pointer-authentication code first, as
     * the Swift backtracer strips it (cc_arch.h), so a record holds no signed address. */
    words.resume_parent = cc__strip_code_address(words.resume_parent);
    if (!cc__is_resume_point(words.resume_parent)) return CC_ASYNC_END_NOT_CODE;
    *parent = words.parent;
    *resume = words.resume_parent;
    return 0;
}

/* async-signal-safe: one candidate. Writes nothing when it does not look like a context.
 * Returns the chain's last context when the chain is whole (its Parent is 0), else 0. */
static uint64_t cc__write_chain(cc__writer_t *w, pid_t tid, uint32_t frame_index, uint32_t flags, uint64_t first,
                                uint32_t *budget) {
    cc_sec_async_chain_t head = { .tid = tid, .frame_index = frame_index, .flags = flags, .first_context = first };
    if (cc__seen(first) >= 0) {
        head.flags |= CC_ASYNC_SEEN;
        head.end = CC_ASYNC_END_SEEN;
        cc__section_begin(w, CC_SEC_ASYNC_CHAIN);
        cc__section_put(w, &head, sizeof head);
        cc__section_end(w);
        return 0;
    }
    uint64_t parent = 0, resume = 0;
    if (*budget == 0 || cc__read_context(first, &parent, &resume) != 0) return 0;
    uint64_t context = first;
    uint32_t count = 0;
    for (;;) {
        g_links[count].context = context;
        g_links[count].parent = parent;
        g_links[count].resume = resume;
        count++;
        if (g_seen_count < CC__ASYNC_SEEN_MAX) g_seen[g_seen_count++] = context;
        (*budget)--;
        if (parent == 0) { head.end = CC_ASYNC_END_PARENT_NULL; break; }
        int seen = cc__seen(parent);
        if (seen >= 0) {
            /* Within this chain it is a cycle; in an earlier one, this chain joins it. */
            int in_this_chain = 0;
            for (uint32_t i = 0; i < count; i++) if (g_links[i].context == parent) in_this_chain = 1;
            head.end = in_this_chain ? CC_ASYNC_END_CYCLE : CC_ASYNC_END_SEEN;
            break;
        }
        if (*budget == 0 || count == CC__ASYNC_SEEN_MAX || g_seen_count == CC__ASYNC_SEEN_MAX) {
            head.end = CC_ASYNC_END_LIMIT;
            break;
        }
        uint64_t next_parent = 0, next_resume = 0;
        uint32_t end = cc__read_context(parent, &next_parent, &next_resume);
        if (end != 0) { head.end = end; break; }
        context = parent;
        parent = next_parent;
        resume = next_resume;
    }
    head.link_count = count;
    cc__section_begin(w, CC_SEC_ASYNC_CHAIN);
    cc__section_put(w, &head, sizeof head);
    cc__section_put(w, g_links, (size_t)count * sizeof g_links[0]);
    cc__section_end(w);
    return head.end == CC_ASYNC_END_PARENT_NULL ? context : 0;
}

/*
 * The task a whole chain belongs to, and the tasks it is a child of (see cc_record.h,
 * CC_SEC_ASYNC_TASK): the task is found from the chain's first context and read with the runtime's
 * debug layout (cc__swift_task_of_context, cc__swift_read_task: cc_swift_abi.h, 3). A parent that
 * is a child itself leads on, at most CC__TASK_DEPTH tasks.
 */
#define CC__TASK_DEPTH       16

/* async-signal-safe: CC_SEC_ASYNC_TASK for the task that ends a whole chain, then, while it is a
 * child, its parent's chain and task. */
static void cc__write_tasks(cc__writer_t *w, pid_t tid, uint32_t frame_index, uint64_t first_context, uint32_t *budget) {
    if (!cc__g.task_metadata) return;
    uint64_t task = cc__swift_task_of_context(first_context);
    for (int depth = 0; task && depth < CC__TASK_DEPTH; depth++) {
        cc__swift_task_t me, parent = { 0 };
        if (!cc__swift_read_task(task, &me)) return;
        int has_parent = me.parent && cc__swift_read_task(me.parent, &parent);
        cc_sec_async_task_t record = {
            .tid = tid, .job_flags = me.flags, .task = task, .first_context = first_context, .task_id = me.id,
            .parent = has_parent ? me.parent : 0, .parent_resume = parent.resume, .parent_context = parent.context,
            .parent_id = parent.id,
        };
        cc__section_begin(w, CC_SEC_ASYNC_TASK);
        cc__section_put(w, &record, sizeof record);
        cc__section_end(w);
        if (!has_parent || *budget == 0) return;
        /* The parent waits for its children: its chain starts at its ResumeContext. */
        first_context = cc__write_chain(w, tid, frame_index, CC_ASYNC_PARENT_TASK, parent.context, budget);
        if (!first_context) return;
        task = me.parent;
    }
}

/* async-signal-safe: see the top of this file. Candidates are the word at fp - 8 of each frame
 * whose fp is non-zero and aligned (a frame without a frame record of its own repeats its
 * caller's fp: its chain is then a SEEN reference), then frame 0's context register. Two reads
 * serve every frame: the candidates, then each aligned candidate's two words; only a candidate
 * whose resume point lies in an image is followed further. */
void cc__write_async_chains(cc__writer_t *w, pid_t tid, const uint64_t *fps, uint32_t count,
                            uint64_t async_register, uint32_t budget) {
    static uint64_t slots[CC__SAFE_WORDS_MAX], candidates[CC__SAFE_WORDS_MAX], pairs[2 * CC__SAFE_WORDS_MAX];
    static uint32_t frame_of[CC__SAFE_WORDS_MAX];
    static uint8_t readable[CC__SAFE_WORDS_MAX];
    g_seen_count = 0;
    uint32_t slot_count = 0;
    for (uint32_t i = 0; i < count && slot_count < CC__SAFE_WORDS_MAX; i++) {
        if (fps[i] < 16 || (fps[i] & 7)) continue;
        frame_of[slot_count] = i;
        slots[slot_count++] = fps[i] - CC__SWIFT_FRAME_CONTEXT_OFFSET;
    }
    cc__safe_read_many(slots, 8, candidates, readable, slot_count);
    /* Keep the aligned, non-zero candidates (slots[] now holds them, frame_of[] their frames). */
    uint32_t kept = 0;
    for (uint32_t k = 0; k < slot_count; k++) {
        if (!readable[k] || candidates[k] == 0 || (candidates[k] & (CC__SWIFT_CONTEXT_ALIGN - 1))) continue;
        frame_of[kept] = frame_of[k];
        slots[kept++] = candidates[k];
    }
    cc__safe_read_many(slots, sizeof(cc__swift_async_context_t), pairs, readable, kept);
    for (uint32_t k = 0; k < kept && budget > 0; k++) {
        /* cc__read_context's test, on the words already read: a repeated candidate (a SEEN
         * reference) is written whatever its words. */
        int looks = readable[k] && cc__is_resume_point(pairs[2 * k + 1]);
        if (!looks && cc__seen(slots[k]) < 0) continue;
        uint64_t root = cc__write_chain(w, tid, frame_of[k], CC_ASYNC_FRAME_POINTER, slots[k], &budget);
        if (root) cc__write_tasks(w, tid, frame_of[k], root, &budget);
    }
    if (async_register && !(async_register & (CC__SWIFT_CONTEXT_ALIGN - 1)) && budget > 0) {
        uint64_t root = cc__write_chain(w, tid, 0, CC_ASYNC_CONTEXT_REGISTER, async_register, &budget);
        if (root) cc__write_tasks(w, tid, 0, root, &budget);
    }
}

/* async-signal-safe: where a request's task waits, for a record of a live process (see
 * CC_SEC_REQUEST_TASK in cc_record.h). The key is the task the request was attached in; it is
 * read only when it reads as a task (its heap metadata is the runtime's task metadata and its
 * kind is a task), with the same debug layout as cc__swift_read_task. Its ResumeContext starts a chain
 * as any candidate does, so a task whose words are not a context writes none. */
void cc__write_request_task(cc__writer_t *w, uint64_t key, uint32_t *budget) {
    cc_sec_request_task_t record = { .key = key };
    cc__swift_task_t task;
    if (!cc__g.task_metadata) {
        record.status = CC_REQUEST_TASK_UNKNOWN;
    } else if (!cc__swift_read_task(key, &task)) {
        record.status = CC_REQUEST_TASK_NOT_TASK;
    } else {
        record.status = CC_REQUEST_TASK_READ;
        record.resume = cc__strip_code_address(task.resume);
        record.context = task.context;
        record.task_id = task.id;
        record.job_flags = task.flags;
    }
    cc__section_begin(w, CC_SEC_REQUEST_TASK);
    cc__section_put(w, &record, sizeof record);
    cc__section_end(w);
    if (record.status != CC_REQUEST_TASK_READ || !record.context || *budget == 0) return;
    g_seen_count = 0;   /* each request's chain stands alone */
    cc__write_chain(w, 0, 0, CC_ASYNC_REQUEST_TASK, record.context, budget);
}
