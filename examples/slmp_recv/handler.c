/*
 * slmp_recv: the receiver side of SLMP (seed 000, §5.1.2) as one payload
 * handler, slmp_ph, for FPsPIN frames (Ethernet/IPv4/UDP/SLMP).
 *
 * Every segment is written by DMA at its byte offset into the message's
 * slot of the host window, so duplicates are harmless; a SYN segment is
 * answered with FPsPIN's ACK (slmp.h, slmp_make_ack). Completion does not
 * trust arrival order or uniqueness: each message slot keeps a bitmap of
 * the segments seen (set with an atomic OR after the segment's DMA is
 * done) and a byte count added only by the task that set the bit; the EOM
 * segment gives the length. The task whose update makes the count equal
 * to the length, with every segment up to the EOM one present, posts one
 * host notification. No header or completion handler: every packet of
 * every message may run on any HPU in any order.
 *
 * Limits (README.md): SLMP_SLOTS messages at a time (msg_id modulo
 * SLMP_SLOTS picks the slot; another id on a busy slot is refused and
 * counted), SLMP_SEGS_MAX segments per message, so at most
 * SLMP_SEGS_MAX * seg_size bytes (95 MiB with the default 1462-byte segments),
 * and at most msg_stride bytes.
 */
#include <spin.h>
#include <slmp.h>

#define SLMP_SLOTS 16
#define SLMP_BITMAP_WORDS 2048 /* 65536 segments: 95 MiB at 1462 B */
#define SLMP_SEGS_MAX (SLMP_BITMAP_WORDS * 32)
/* Largest seg_size honoured (a jumbo frame's payload fits): keeps
 * SLMP_SEGS_MAX * seg_size + 1 within 32 bits. */
#define SLMP_SEG_MAX 65535u

/* Written by the host before traffic (symbol `slmp_config`). */
typedef struct slmp_config {
    /* Payload bytes of every segment but the EOM one (which may be
     * shorter); offsets must be multiples of it. FPsPIN's sender uses a
     * fixed payload size rounded down to its alignment. */
    uint32_t seg_size;
    /* Bytes of host window per message slot: message msg_id is written at
     * window + (msg_id % SLMP_SLOTS) * msg_stride + offset. */
    uint32_t msg_stride;
} slmp_config_t;

/* Defaults: FPsPIN's full-MTU segments, 1 MiB per message. */
volatile slmp_config_t slmp_config = {SLMP_MTU1500_PAYLOAD, 1u << 20};

/* Per-message state in handler memory. A slot is free when tag == 0; the
 * host frees a completed slot by writing zeros over it (all
 * slmp_slot_bytes), once it has consumed the message. */
typedef struct slmp_slot {
    uint32_t tag;      /* msg_id / SLMP_SLOTS + 1: tells ids of one slot apart */
    uint32_t received; /* payload bytes of distinct segments, DMA done */
    uint32_t total;    /* message length + 1 once the EOM segment was seen */
    uint32_t done;     /* 1 once the completion was posted */
    uint32_t bits[SLMP_BITMAP_WORDS];
} slmp_slot_t;

slmp_slot_t slmp_slots[SLMP_SLOTS];
/* For the host: table geometry without a copy of the C layout. */
const uint32_t slmp_slot_count = SLMP_SLOTS;
const uint32_t slmp_slot_bytes = sizeof(slmp_slot_t);
const uint32_t slmp_segs_max = SLMP_SEGS_MAX;

/* What the host gets (Notification.data, little-endian); host_ref is the
 * host address of the message's first byte. */
typedef struct slmp_done_note {
    uint32_t msg_id;
    uint32_t length;
    uint32_t slot;
} slmp_done_note_t;

/* Counters (spin_push_counter index; value in parentheses). */
enum {
    SLMP_CTR_SEGMENT = 0,    /* new segment written (its payload bytes) */
    SLMP_CTR_DUPLICATE = 1,  /* segment seen before: not counted again (bytes) */
    SLMP_CTR_ACK = 2,        /* ACK sent (its frame bytes) */
    SLMP_CTR_COMPLETE = 3,   /* message complete, host notified (its length) */
    SLMP_CTR_BAD_FRAME = 4,  /* not an SLMP segment (slmp_frame_error) */
    SLMP_CTR_MISALIGNED = 5, /* offset not a multiple of seg_size, or a wrong payload length (offset) */
    SLMP_CTR_OUT_OF_WINDOW = 6, /* beyond msg_stride or the host window (offset) */
    SLMP_CTR_TOO_LARGE = 7,  /* segment index >= SLMP_SEGS_MAX (offset) */
    SLMP_CTR_SLOT_BUSY = 8,  /* slot held by another msg_id (the held slot's tag) */
    SLMP_CTR_EOM_CONFLICT = 9, /* second EOM with another length, or segments past the EOM (offset) */
    SLMP_CTR_AFTER_DONE = 10, /* segment of a completed message: ACKed, not written (offset) */
    SLMP_CTR_CMD_FAILED = 11, /* DMA or notification refused by the NIC */
    SLMP_CTR_NOT_DATA = 12,  /* an ACK segment arrived (flags) */
};

static inline void count(uint32_t ctr, uint32_t value)
{
    spin_push_counter(ctr, value);
}

static void send_ack(uint8_t *frame)
{
    /* In place over the headers: the payload behind them is already in
     * host memory. */
    uint32_t n = slmp_make_ack(frame, frame);
#ifdef SOFTSPIN_SABOTAGE
    ((slmp_pkt_hdr_t *)frame)->slmp_hdr.flags |= htons(SLMP_FLAG_SYN); /* a wrong ACK: the tests must see it */
#endif
    if (spin_send_packet(frame, n, NULL) == SPIN_OK)
        count(SLMP_CTR_ACK, n);
    else
        count(SLMP_CTR_CMD_FAILED, 0);
}

/* Are segments 0..last all present? */
static int all_present(volatile slmp_slot_t *s, uint32_t last)
{
    uint32_t full = last / 32;
    for (uint32_t w = 0; w < full; w++)
        if (s->bits[w] != 0xffffffffu)
            return 0;
    uint32_t mask = (last % 32 == 31) ? 0xffffffffu : ((1u << (last % 32 + 1)) - 1);
    return (s->bits[full] & mask) == mask;
}

/* Post the completion if this task is the one that sees it. Called after
 * each update of `received` or `total`: whichever update comes last sees
 * both, and the CAS on `done` lets exactly one task post. */
static void maybe_complete(task_t *t, volatile slmp_slot_t *s, uint32_t msg, uint32_t slot_i, uint32_t seg)
{
    uint32_t total = __atomic_load_n(&s->total, __ATOMIC_SEQ_CST);
    if (total == 0 || __atomic_load_n(&s->received, __ATOMIC_SEQ_CST) != total - 1)
        return;
    uint32_t len = total - 1;
    uint32_t last = len == 0 ? 0 : (len - 1) / seg;
    if (!all_present(s, last)) {
        /* Equal bytes with a hole: segments past the EOM were counted. */
        count(SLMP_CTR_EOM_CONFLICT, len);
        return;
    }
    uint32_t zero = 0;
    if (!__atomic_compare_exchange_n(&s->done, &zero, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        return;
    uint64_t host = ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
    slmp_done_note_t note = {msg, len, slot_i};
    if (spin_notify(&note, sizeof note, host + (uint64_t)slot_i * slmp_config.msg_stride, NULL) == 0)
        count(SLMP_CTR_COMPLETE, len);
    else
        count(SLMP_CTR_CMD_FAILED, 1);
}

__handler__ void slmp_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint8_t *p = (uint8_t *)t->pkt_mem;
    uint32_t len;
    enum slmp_frame_error fe = slmp_frame_check(p, t->pkt_mem_size, &len);
    if (fe != SLMP_FRAME_OK) {
        count(SLMP_CTR_BAD_FRAME, fe);
        return;
    }
    slmp_pkt_hdr_t *h = (slmp_pkt_hdr_t *)p;
    uint16_t flags = slmp_flags(&h->slmp_hdr);
    if (flags & SLMP_FLAG_ACK) {
        count(SLMP_CTR_NOT_DATA, flags);
        return;
    }
    uint32_t msg = slmp_msg_id(&h->slmp_hdr), off = slmp_offset(&h->slmp_hdr);
    int eom = (flags & SLMP_FLAG_EOM) != 0, syn = (flags & SLMP_FLAG_SYN) != 0;
    uint32_t seg = slmp_config.seg_size, stride = slmp_config.msg_stride;

    /* Fixed-size segments make offset / seg a segment index: every segment
     * but the EOM one is full, the EOM one at most full. */
    if (seg == 0 || seg > SLMP_SEG_MAX || off % seg != 0 || len > seg || (!eom && len != seg)) {
        count(SLMP_CTR_MISALIGNED, off);
        return;
    }
    uint32_t idx = off / seg;
    if (idx >= SLMP_SEGS_MAX) {
        count(SLMP_CTR_TOO_LARGE, off);
        return;
    }
    uint32_t slot_i = msg % SLMP_SLOTS;
    uint64_t dst = (uint64_t)slot_i * stride + off;
    if ((uint64_t)off + len > stride || dst + len > t->host_mem_size) {
        count(SLMP_CTR_OUT_OF_WINDOW, off);
        return;
    }

    volatile slmp_slot_t *s = &slmp_slots[slot_i];
    uint32_t tag = msg / SLMP_SLOTS + 1, held = 0;
    if (!__atomic_compare_exchange_n(&s->tag, &held, tag, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) &&
        held != tag) {
        count(SLMP_CTR_SLOT_BUSY, held); /* no ACK: the sender retries later */
        return;
    }
    if (__atomic_load_n(&s->done, __ATOMIC_SEQ_CST)) {
        /* The host may already reuse the buffer: do not write. Still ACK,
         * the first ACK may have been lost. */
        count(SLMP_CTR_AFTER_DONE, off);
        if (syn)
            send_ack(p);
        return;
    }

    uint32_t word = idx / 32, bit = 1u << (idx % 32);
    if (!(s->bits[word] & bit)) {
        if (len > 0) {
            uint64_t host = ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
            spin_cmd_t dma;
            /* Wait for the DMA before setting the bit: when the count is
             * complete, every byte is in host memory. */
            if (spin_dma_to_host(host + dst, (uint32_t)(p + SLMP_FRAME_HDR_LEN), len, false, &dma) != SPIN_OK ||
                spin_cmd_wait(dma) != SPIN_OK) {
                count(SLMP_CTR_CMD_FAILED, 0);
                return;
            }
        }
        uint32_t old = __atomic_fetch_or(&s->bits[word], bit, __ATOMIC_SEQ_CST);
        if (!(old & bit)) {
            __atomic_fetch_add(&s->received, len, __ATOMIC_SEQ_CST);
            count(SLMP_CTR_SEGMENT, len);
        } else {
            count(SLMP_CTR_DUPLICATE, len);
        }
    } else {
        count(SLMP_CTR_DUPLICATE, len);
    }

    if (eom) {
        uint32_t want = off + len + 1, had = 0;
        if (!__atomic_compare_exchange_n(&s->total, &had, want, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) &&
            had != want)
            count(SLMP_CTR_EOM_CONFLICT, off);
    } else {
        uint32_t total = __atomic_load_n(&s->total, __ATOMIC_SEQ_CST);
        if (total != 0 && off >= total - 1)
            count(SLMP_CTR_EOM_CONFLICT, off);
    }
    maybe_complete(t, s, msg, slot_i, seg);

    if (syn)
        send_ack(p);
}
