/*
 * slmp_ddt: MPI derived datatypes unpacked on the NIC (seed 000 §6.3.2 "MPI
 * datatypes", seed 004 §5.2 "MPI Datatypes"). A message is the packed stream
 * of a datatype, sent over SLMP (seed 000 §5.1); the payload handler
 * slmp_ddt_ph scatters each segment's bytes straight to their places in the
 * host buffer, so the host never copies. SLMP's receive side (offset
 * addressing, ACK of every SYN segment after its data is in host memory,
 * bitmap + byte-count completion with one notification, counters) is
 * slmp.h's receiver core, shared with examples/slmp_recv.
 *
 * The datatype is a tree of nodes (bytes, vector, indexed, struct) that the
 * host serialises into `ddt_desc` (ddt.py builds it) with every node's size
 * (packed bytes) and extent precomputed, and prefix sums of the blocks of
 * indexed and struct nodes. That lets a segment seek: stream byte p maps to
 * its destination by one descent from the root (a division per vector,
 * a binary search per indexed/struct level), with no state carried from
 * other segments. So segments of one message run on any HPU in any order
 * (packet-level parallelism).
 *
 * Message-level mode (ddt_mode = 1) applies one message's segments in
 * stream order, one at a time: the per-message state is the next stream
 * offset (FPsPIN's port keeps MPICH's dataloop segment there and forces the
 * sender's window to 1, seed 000 §5.3). The seek does not need it; write
 * order does: when the type's typemap overlaps itself (seed 000's Complex
 * type does: size 110592 B, extent 55152 B), the bytes MPI's serial unpack
 * leaves are the last ones written, which only in-order application gives.
 * A segment ahead of the next offset is dropped unACKed (the sender resends
 * it), one behind is a duplicate (ACKed again), one arriving while another
 * of its message is being applied is dropped unACKed.
 *
 * Limits (README.md): DDT_DESC_WORDS_MAX words of description, DDT_DEPTH_MAX
 * levels, displacements and strides non-negative, 32-bit sizes; SLMP's
 * limits as examples/slmp_recv.
 */
#include <spin.h>
#include <slmp.h> /* the receiver core: slot table, counters, completion, ACK */

#define DDT_MAGIC 0x31544444u /* "DDT1" little-endian */
#define DDT_DESC_WORDS_MAX 4096u /* 16 KiB of handler memory */
#define DDT_DEPTH_MAX 16u
#define DDT_DMA_INFLIGHT 8u /* DMAs of one segment issued before waiting */

/* Node kinds and the header word layout (ddt.py writes the same). */
enum { DDT_BYTES = 1, DDT_VECTOR = 2, DDT_INDEXED = 3, DDT_STRUCT = 4 };
enum { DDT_N_KIND = 0, DDT_N_SIZE = 1, DDT_N_EXTENT = 2, DDT_N_FLAGS = 3, DDT_N_HDR = 4 };
#define DDT_DENSE 1u /* flag: the node's bytes fill [0, size) and size == extent */

/* Why a description was refused (value of DDT_CTR_BAD_DESC). */
enum ddt_error {
    DDT_OK = 0,
    DDT_E_HEADER = 1, /* magic, word count (> DDT_DESC_WORDS_MAX) or root index */
    DDT_E_NODE = 2,   /* a node or its arrays beyond the description, or an unknown kind */
    DDT_E_SIZE = 3,   /* sizes inconsistent (size != sum of its blocks) or zero */
    DDT_E_DEPTH = 4,  /* deeper than DDT_DEPTH_MAX (or a cycle) */
    DDT_E_WINDOW = 5, /* a destination beyond msg_stride: counted as SLMP_CTR_OUT_OF_WINDOW */
    DDT_E_CMD = 6,    /* a DMA refused: counted as SLMP_CTR_CMD_FAILED */
};

/* Handler-specific counters, after the receiver core's. */
enum {
    DDT_CTR_BAD_DESC = SLMP_CTR_FIRST_FREE, /* description refused (enum ddt_error) */
    DDT_CTR_PIECES = SLMP_CTR_FIRST_FREE + 1, /* DMAs of a new segment (their number) */
    DDT_CTR_OUT_OF_ORDER = SLMP_CTR_FIRST_FREE + 2, /* message mode: ahead of the next offset (offset) */
    DDT_CTR_BUSY = SLMP_CTR_FIRST_FREE + 3, /* message mode: another segment of the message in progress (offset) */
};

/* Written by the host before traffic. */
volatile slmp_config_t slmp_config = {SLMP_MTU1500_PAYLOAD, 1u << 20};
volatile uint32_t ddt_desc[DDT_DESC_WORDS_MAX]; /* zero: every segment refused (DDT_E_HEADER) */
volatile uint32_t ddt_mode;                     /* 0: packet-level, 1: message-level */

slmp_slot_t slmp_slots[SLMP_SLOTS];
/* Message-level mode's per-message state; zeroed with the slot. */
typedef struct ddt_msg_state {
    uint32_t next; /* stream bytes applied in order */
    uint32_t busy; /* 1 while a task applies a segment */
} ddt_msg_state_t;
ddt_msg_state_t ddt_msg_state[SLMP_SLOTS];

/* For the host: geometry without a copy of the C layout. */
const uint32_t slmp_slot_count = SLMP_SLOTS;
const uint32_t slmp_slot_bytes = sizeof(slmp_slot_t);
const uint32_t slmp_segs_max = SLMP_SEGS_MAX;
const uint32_t ddt_desc_words_max = DDT_DESC_WORDS_MAX;
const uint32_t ddt_depth_max = DDT_DEPTH_MAX;
const uint32_t ddt_msg_state_bytes = sizeof(ddt_msg_state_t);

/* Where stream byte p of the root type goes: *dst (from the message slot's
 * start) and *run, the bytes from p on that are contiguous in the stream and
 * at the destination. Reads only the description; `limit` bounds
 * destinations (msg_stride). */
static int ddt_locate(uint32_t nw, uint32_t root, uint32_t p, uint32_t limit, uint64_t *dst, uint32_t *run)
{
    const volatile uint32_t *d = ddt_desc;
    uint32_t n = root;
    uint64_t base = 0;
    for (uint32_t depth = 0; depth < DDT_DEPTH_MAX; depth++) {
        if (n > nw - DDT_N_HDR)
            return DDT_E_NODE;
        uint32_t kind = d[n + DDT_N_KIND], size = d[n + DDT_N_SIZE];
        if (p >= size)
            return DDT_E_SIZE; /* the parent's sizes promised more */
        if (kind == DDT_BYTES || (d[n + DDT_N_FLAGS] & DDT_DENSE)) {
            *dst = base + p;
            *run = size - p;
            return DDT_OK;
        }
        uint32_t child, r;
        uint64_t blk, disp;
        if (kind == DDT_VECTOR) {
            if (n > nw - 8)
                return DDT_E_NODE;
            uint32_t count = d[n + 4], bl = d[n + 5], stride = d[n + 6];
            child = d[n + 7];
            if (child > nw - DDT_N_HDR)
                return DDT_E_NODE;
            blk = (uint64_t)bl * d[child + DDT_N_SIZE];
            if (blk == 0 || blk > size || blk * count != size)
                return DDT_E_SIZE;
            uint32_t i = p / (uint32_t)blk;
            r = p - i * (uint32_t)blk;
            disp = (uint64_t)i * stride;
        } else if (kind == DDT_INDEXED || kind == DDT_STRUCT) {
            if (n > nw - 5)
                return DDT_E_NODE;
            uint32_t count = d[n + 4];
            uint32_t a = n + (kind == DDT_INDEXED ? 6 : 5); /* blocklen[] */
            uint64_t end = (uint64_t)a + (uint64_t)count * (kind == DDT_INDEXED ? 3 : 4) + 1;
            if (count == 0 || end > nw)
                return DDT_E_NODE;
            const volatile uint32_t *bl = d + a, *dsp = bl + count;
            const volatile uint32_t *pre = dsp + count + (kind == DDT_STRUCT ? count : 0);
            if (pre[0] != 0 || pre[count] != size)
                return DDT_E_SIZE;
            uint32_t lo = 0, hi = count; /* pre[lo] <= p < pre[hi] */
            while (hi - lo > 1) {
                uint32_t mid = lo + (hi - lo) / 2;
#ifdef SOFTSPIN_SABOTAGE
                if (pre[mid] < p) /* wrong at block starts: the tests must see it */
#else
                if (pre[mid] <= p)
#endif
                    lo = mid;
                else
                    hi = mid;
            }
            child = kind == DDT_INDEXED ? d[n + 5] : dsp[count + lo];
            if (child > nw - DDT_N_HDR)
                return DDT_E_NODE;
            blk = (uint64_t)bl[lo] * d[child + DDT_N_SIZE];
            if (pre[lo] > p || blk == 0 || blk != (uint64_t)pre[lo + 1] - pre[lo] || p - pre[lo] >= blk)
                return DDT_E_SIZE; /* prefix sums not increasing, or not the blocks */
            r = p - pre[lo];
            disp = dsp[lo];
        } else {
            return DDT_E_NODE;
        }
        /* Within a block of blocklen children: child j, byte q of it. */
        uint32_t csize = d[child + DDT_N_SIZE], cext = d[child + DDT_N_EXTENT];
        base += disp;
        if (base >= limit)
            return DDT_E_WINDOW;
        if ((d[child + DDT_N_FLAGS] & DDT_DENSE) && cext == csize) {
            /* Dense children back to back: the whole block is one run. */
            *dst = base + r;
            *run = (uint32_t)(blk - r);
            return DDT_OK;
        }
        uint32_t j = r / csize;
        base += (uint64_t)j * cext;
        if (base >= limit)
            return DDT_E_WINDOW;
        p = r - j * csize;
        n = child;
    }
    return DDT_E_DEPTH;
}

/* Check the description's header; on success set its word count and root. */
static int ddt_header(uint32_t *nw, uint32_t *root)
{
    uint32_t n = ddt_desc[1], r = ddt_desc[2];
    if (ddt_desc[0] != DDT_MAGIC || n > DDT_DESC_WORDS_MAX || n < 3 + DDT_N_HDR || r < 3 || r > n - DDT_N_HDR)
        return DDT_E_HEADER;
    *nw = n;
    *root = r;
    return DDT_OK;
}

static int wait_all(spin_cmd_t *cmds, uint32_t n, int err)
{
    for (uint32_t i = 0; i < n; i++)
        if (spin_cmd_wait(cmds[i]) != SPIN_OK)
            err = err ? err : DDT_E_CMD;
    return err;
}

/* DMA the segment's payload, stream bytes [off, off + len), to its places
 * under `slot_host` and wait for all of it. Pieces adjacent at the
 * destination are merged into one DMA. */
static int ddt_scatter(uint32_t nw, uint32_t root, uint64_t slot_host, uint32_t limit, const uint8_t *src,
                       uint32_t off, uint32_t len)
{
    spin_cmd_t cmds[DDT_DMA_INFLIGHT];
    uint32_t nc = 0, pieces = 0;
    uint64_t pd = 0;
    uint32_t pn = 0;
    const uint8_t *ps = src;
    int err = DDT_OK;
    while (len > 0 || pn > 0) {
        uint64_t dst = 0;
        uint32_t run = 0;
        if (len > 0) {
            err = ddt_locate(nw, root, off, limit, &dst, &run);
            if (err)
                break;
            if (run > len)
                run = len;
            if (dst + run > limit) {
                err = DDT_E_WINDOW;
                break;
            }
            if (pn > 0 && pd + pn == dst) {
                pn += run;
                src += run, off += run, len -= run;
                continue;
            }
        }
        if (pn > 0) {
            if (nc == DDT_DMA_INFLIGHT) {
                if ((err = wait_all(cmds, nc, DDT_OK)))
                    break;
                nc = 0;
            }
            if (spin_dma_to_host(slot_host + pd, (uint32_t)ps, pn, false, &cmds[nc]) != SPIN_OK) {
                err = DDT_E_CMD;
                break;
            }
            nc++, pieces++;
        }
        pd = dst, ps = src, pn = run;
        src += run, off += run, len -= run;
    }
    err = wait_all(cmds, nc, err);
    if (!err)
        slmp_count(DDT_CTR_PIECES, pieces);
    return err;
}

static void count_error(int err, uint32_t off)
{
    if (err == DDT_E_WINDOW)
        slmp_count(SLMP_CTR_OUT_OF_WINDOW, off);
    else if (err == DDT_E_CMD)
        slmp_count(SLMP_CTR_CMD_FAILED, 0);
    else
        slmp_count(DDT_CTR_BAD_DESC, err);
}

__handler__ void slmp_ddt_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint32_t seg = slmp_config.seg_size, stride = slmp_config.msg_stride;
    slmp_rx_seg_t sg;
    if (!slmp_rx_parse(t, seg, &sg))
        return;
    uint32_t nw, root;
    int err = ddt_header(&nw, &root);
    if (err) {
        slmp_count(DDT_CTR_BAD_DESC, err);
        return;
    }
    /* The stream is one instance of the root type (ddt.py wraps the
     * element count into it): nothing beyond its size. */
    uint64_t slot_off = (uint64_t)sg.slot * stride;
    if ((uint64_t)sg.off + sg.len > ddt_desc[root + DDT_N_SIZE] || slot_off + stride > t->host_mem_size) {
        slmp_count(SLMP_CTR_OUT_OF_WINDOW, sg.off);
        return;
    }
    volatile slmp_slot_t *s = &slmp_slots[sg.slot];
    enum slmp_rx_claim_result c = slmp_rx_claim(s, &sg);
    if (c == SLMP_RX_STOP)
        return;
    uint64_t slot_host = slmp_host_base(t) + slot_off;

    if (ddt_mode == 1) {
        /* Message-level: one segment of the message at a time, in order. */
        volatile ddt_msg_state_t *m = &ddt_msg_state[sg.slot];
        if (c == SLMP_RX_NEW && sg.off >= __atomic_load_n(&m->next, __ATOMIC_SEQ_CST)) {
            uint32_t idle = 0;
            if (!__atomic_compare_exchange_n(&m->busy, &idle, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
                slmp_count(DDT_CTR_BUSY, sg.off); /* no ACK: the sender resends */
                return;
            }
            uint32_t next = m->next;
            if (sg.off > next) {
                __atomic_store_n(&m->busy, 0, __ATOMIC_SEQ_CST);
                slmp_count(DDT_CTR_OUT_OF_ORDER, sg.off); /* no ACK: the sender resends */
                return;
            }
            if (sg.off == next && sg.len > 0 &&
                (err = ddt_scatter(nw, root, slot_host, stride, sg.payload, sg.off, sg.len))) {
                __atomic_store_n(&m->busy, 0, __ATOMIC_SEQ_CST);
                count_error(err, sg.off);
                return;
            }
            if (sg.off == next) {
                slmp_rx_mark(s, &sg);
                __atomic_store_n(&m->next, next + sg.len, __ATOMIC_SEQ_CST);
            } else {
                slmp_rx_mark(s, &sg); /* applied by another task meanwhile: a duplicate */
            }
            __atomic_store_n(&m->busy, 0, __ATOMIC_SEQ_CST);
        } else {
            slmp_rx_mark(s, &sg); /* behind the next offset: already applied */
        }
        slmp_rx_finish(s, &sg, seg, slot_host);
        return;
    }

    /* Packet-level: place the segment wherever it falls in the stream. */
    if (c == SLMP_RX_NEW && sg.len > 0 && (err = ddt_scatter(nw, root, slot_host, stride, sg.payload, sg.off, sg.len))) {
        count_error(err, sg.off);
        return;
    }
    slmp_rx_mark(s, &sg);
    slmp_rx_finish(s, &sg, seg, slot_host);
}
