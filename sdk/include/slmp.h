/*
 * slmp.h - the receiver side of SLMP, the sPIN Lightweight Messaging
 * Protocol (seed 000, §5.1.2 "The solution"): FPsPIN frames
 * Ethernet / IPv4 (IHL 5) / UDP / SLMP header / payload.
 *
 * The header struct and flags are FPsPIN's and live in fpspin.h
 * (slmp_hdr_t, slmp_pkt_hdr_t, SLMP_FLAG_EOM/SYN/ACK = MKEOM/MKSYN/MKACK,
 * SLMP_PAYLOAD_LEN); this header adds what a receiving handler needs:
 * the UDP port, accessors, a frame check and the ACK a SYN segment asks for.
 *
 * SLMP_UDP_PORT must equal softspin_wire::SLMP_UDP_PORT (crates/wire/src/
 * slmp.rs); examples/slmp_recv/test_slmp_recv.py compares the two.
 */
#ifndef SOFTSPIN_SLMP_H
#define SOFTSPIN_SLMP_H

#include <stdint.h>
#include "fpspin.h"

/* FPsPIN's matching ruleset finds SLMP by this UDP destination port. */
#define SLMP_UDP_PORT 9330
/* Bytes of the SLMP header (flags u16, msg_id u32, offset u32, big-endian). */
#define SLMP_HDR_LEN 10u
/* Bytes before the payload of an FPsPIN SLMP frame (14 + 20 + 8 + 10). */
#define SLMP_FRAME_HDR_LEN ((uint32_t)sizeof(slmp_pkt_hdr_t))
/* The largest segment payload in a 1500-byte MTU (1500 - 20 - 8 - 10):
 * what FPsPIN's sender puts in each segment with alignment 1. */
#define SLMP_MTU1500_PAYLOAD 1462u
/* An ACK is the headers alone: 52 bytes (the MAC pads it on the wire). */
#define SLMP_ACK_FRAME_LEN SLMP_FRAME_HDR_LEN

_Static_assert(sizeof(slmp_hdr_t) == SLMP_HDR_LEN, "SLMP header is 10 bytes");
_Static_assert(sizeof(slmp_pkt_hdr_t) == 52, "FPsPIN SLMP frame headers are 52 bytes");

/* Host-order accessors of a wire header. */
static inline uint16_t slmp_flags(const slmp_hdr_t *h) { return ntohs(h->flags); }
static inline uint32_t slmp_msg_id(const slmp_hdr_t *h) { return ntohl(h->msg_id); }
static inline uint32_t slmp_offset(const slmp_hdr_t *h) { return ntohl(h->offset); }
static inline int slmp_is_eom(const slmp_hdr_t *h) { return (slmp_flags(h) & SLMP_FLAG_EOM) != 0; }
static inline int slmp_is_syn(const slmp_hdr_t *h) { return (slmp_flags(h) & SLMP_FLAG_SYN) != 0; }
static inline int slmp_is_ack(const slmp_hdr_t *h) { return (slmp_flags(h) & SLMP_FLAG_ACK) != 0; }

/* Why a frame is not an SLMP segment (0: it is one). */
enum slmp_frame_error {
    SLMP_FRAME_OK = 0,
    SLMP_FRAME_SHORT,      /* shorter than the 52 header bytes */
    SLMP_FRAME_NOT_UDP,    /* not IPv4 (IHL 5, unfragmented) carrying UDP */
    SLMP_FRAME_BAD_LENGTH, /* IP total / UDP length beyond the frame or below the headers */
    SLMP_FRAME_ERRORS      /* count */
};

/* Check an FPsPIN SLMP frame of `len` bytes; on success set *payload_len
 * from the UDP length (bytes after any Ethernet padding are not payload).
 * The UDP port is not checked: the NIC's matching rules pick the frames. */
static inline enum slmp_frame_error slmp_frame_check(const void *frame, uint32_t len, uint32_t *payload_len)
{
    if (len < SLMP_FRAME_HDR_LEN)
        return SLMP_FRAME_SHORT;
    const slmp_pkt_hdr_t *h = (const slmp_pkt_hdr_t *)frame;
    if (ntohs(h->eth_hdr.ethertype) != ETHERTYPE_IPV4 || h->ip_hdr.version_ihl != 0x45 ||
        h->ip_hdr.protocol != IP_PROTO_UDP || (ntohs(h->ip_hdr.frag_offset) & 0x3fff) != 0)
        return SLMP_FRAME_NOT_UDP;
    uint32_t ip_len = ntohs(h->ip_hdr.length), udp_len = ntohs(h->udp_hdr.length);
    uint32_t l3 = len - (uint32_t)sizeof(eth_hdr_t);
    if (ip_len > l3 || udp_len + sizeof(ipv4_hdr_t) > ip_len || udp_len < sizeof(udp_wire_hdr_t) + SLMP_HDR_LEN)
        return SLMP_FRAME_BAD_LENGTH;
    *payload_len = udp_len - (uint32_t)sizeof(udp_wire_hdr_t) - SLMP_HDR_LEN;
    return SLMP_FRAME_OK;
}

/* Write into `ack` (SLMP_ACK_FRAME_LEN bytes) the ACK FPsPIN's receiver
 * sends for the data frame `data` (fpga/app/pspin/deps/pspin/examples/slmp,
 * prepare_hdrs_ack): MAC and IP addresses and UDP ports swapped, the other
 * IP fields (TOS, id, fragment, TTL) kept, IP total length 38 and UDP length
 * 18 (the SLMP header is the whole payload), the IP checksum recomputed,
 * UDP checksum 0 (none), msg_id and offset echoed. FPsPIN's flags are the
 * ACK bit alone (EOM and SYN of the data segment are not echoed); FPsPIN's
 * sender only tests the ACK bit. `ack` may equal `data` (in place: the
 * payload behind the headers is not touched). Returns the ACK's length. */
static inline uint32_t slmp_make_ack(const void *data, void *ack)
{
    const slmp_pkt_hdr_t *d = (const slmp_pkt_hdr_t *)data;
    slmp_pkt_hdr_t *a = (slmp_pkt_hdr_t *)ack;
    /* Read everything swapped first, so in-place works. */
    mac_addr_t dmac = d->eth_hdr.dest, smac = d->eth_hdr.src;
    uint32_t saddr = d->ip_hdr.saddr, daddr = d->ip_hdr.daddr;
    uint16_t sport = d->udp_hdr.src_port, dport = d->udp_hdr.dst_port;
    if (a != d) {
        const uint8_t *s = (const uint8_t *)data;
        uint8_t *t = (uint8_t *)ack;
        for (uint32_t i = 0; i < SLMP_FRAME_HDR_LEN; i++)
            t[i] = s[i];
    }
    a->eth_hdr.dest = smac;
    a->eth_hdr.src = dmac;
    a->ip_hdr.saddr = daddr;
    a->ip_hdr.daddr = saddr;
    a->ip_hdr.length = htons((uint16_t)(sizeof(ipv4_hdr_t) + sizeof(udp_wire_hdr_t) + SLMP_HDR_LEN));
    a->ip_hdr.checksum = 0;
    a->ip_hdr.checksum = ip_checksum(&a->ip_hdr, sizeof(ipv4_hdr_t));
    a->udp_hdr.src_port = dport;
    a->udp_hdr.dst_port = sport;
    a->udp_hdr.length = htons((uint16_t)(sizeof(udp_wire_hdr_t) + SLMP_HDR_LEN));
    a->udp_hdr.checksum = 0;
    a->slmp_hdr.flags = htons(SLMP_FLAG_ACK);
    return SLMP_ACK_FRAME_LEN;
}

/* ---- The receiver core: what every SLMP receive handler shares ----------
 *
 * Used by examples/slmp_recv (payload written contiguously at its offset)
 * and examples/slmp_ddt (payload scattered by an MPI datatype). A handler
 * parses a segment (slmp_rx_parse), checks where it goes, claims the
 * message's slot (slmp_rx_claim), places the payload when the segment is new
 * and waits for its DMA, then marks it (slmp_rx_mark) and finishes
 * (slmp_rx_finish: EOM length, completion, ACK). Completion does not trust
 * arrival order or uniqueness: each message slot keeps a bitmap of the
 * segments seen (set with an atomic OR after the segment's DMA is done) and a
 * byte count added only by the task that set the bit; the EOM segment gives
 * the length. The task whose update makes the count equal to the length,
 * with every segment up to the EOM one present, posts one host notification.
 */
#include "spin.h"

#ifndef SLMP_SLOTS
#define SLMP_SLOTS 16
#endif
#ifndef SLMP_BITMAP_WORDS
#define SLMP_BITMAP_WORDS 2048 /* 65536 segments: 95 MiB at 1462 B */
#endif
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
     * window + (msg_id % SLMP_SLOTS) * msg_stride (+ where its bytes go). */
    uint32_t msg_stride;
    /* SLMP_CFG_* bits; 0 is FPsPIN's behaviour. */
    uint32_t flags;
} slmp_config_t;

/* Withhold the ACK of a completed message's segments until the host has
 * stored the message (slot done == SLMP_DONE_STORED): the segment that
 * completes it goes unacknowledged, the sender retransmits it, and the
 * retransmission is ACKed once the host is done. An ACKed message is then
 * a stored one, at the cost of one retransmission per message. */
#define SLMP_CFG_ACK_AFTER_HOST 1u

/* Defined by the handler (initialised with its defaults). */
extern volatile slmp_config_t slmp_config;
static inline uint32_t slmp_config_flags(void) { return slmp_config.flags; }

/* Slot tags other than an owner's (msg_id / SLMP_SLOTS + 1, at most 2^28). */
#define SLMP_TAG_CLAIMING 0xffffffffu /* a task is writing the key: wait */
#define SLMP_TAG_RETIRING 0xfffffffeu /* the host is freeing the slot: refuse (no ACK) */
#define SLMP_TAG_EVICTED 0xfffffffdu  /* tombstone of an evicted message: refuse its key, free for others */
#define SLMP_TAG_DELIVERED 0xfffffffcu /* tombstone of a stored message: ACK its key, free for others */
/* Spins on SLMP_TAG_CLAIMING before refusing (its writer may have died). */
#define SLMP_CLAIM_SPINS 1024
/* slmp_slot_t.done */
#define SLMP_DONE_POSTED 1u /* complete, host notified */
#define SLMP_DONE_STORED 2u /* written by the host (set by the host) */

/* Per-message state in handler memory. A message is its sender's
 * (IPv4 address, UDP port) and msg_id: segments of the same id from
 * another sender are refused (no ACK), never mixed in. A slot is free when
 * tag == 0 (all bytes zero). The host retires a slot (a stored message, or
 * an incomplete one idle too long) in two steps, so no task still working
 * on it writes into its successor: tag = SLMP_TAG_RETIRING, then, once
 * every task that saw the old tag has ended, everything zero but the key,
 * with a tombstone tag. Writing zeros over the whole slot also frees it
 * (what a host that handles one sender at a time may do). */
typedef struct slmp_slot {
    uint32_t tag;       /* msg_id / SLMP_SLOTS + 1, 0, or SLMP_TAG_* */
    uint32_t received;  /* payload bytes of distinct segments, DMA done */
    uint32_t total;     /* message length + 1 once the EOM segment was seen */
    uint32_t done;      /* SLMP_DONE_POSTED once the completion was posted */
    uint32_t msg;       /* the key: msg_id, */
    uint32_t peer_ip;   /* the sender's IPv4 address (wire order), */
    uint32_t peer_port; /* and UDP port (host order) */
    uint32_t seen;      /* segments of this message that reached the slot: the host's sign of life */
    uint32_t bits[SLMP_BITMAP_WORDS];
} slmp_slot_t;
_Static_assert(__builtin_offsetof(slmp_slot_t, bits) == 32, "the host reads the slot header as 8 words");

/* What the host gets (Notification.data, little-endian); host_ref is the
 * host address of the message's slot. */
typedef struct slmp_done_note {
    uint32_t msg_id;
    uint32_t length;
    uint32_t slot;
} slmp_done_note_t;

/* Counters (spin_push_counter index; value in parentheses). Handlers add
 * their own from SLMP_CTR_FIRST_FREE. */
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
    SLMP_CTR_FIRST_FREE = 13,
};

static inline void slmp_count(uint32_t ctr, uint32_t value)
{
    spin_push_counter(ctr, value);
}

/* A data segment as the receiver sees it. */
typedef struct slmp_rx_seg {
    uint8_t *frame;         /* the frame in L1 (the ACK is built over it) */
    const uint8_t *payload; /* frame + SLMP_FRAME_HDR_LEN */
    uint32_t len;           /* payload bytes */
    uint32_t msg, off, idx; /* msg_id, byte offset, segment index (off / seg_size) */
    uint32_t slot;          /* msg % SLMP_SLOTS */
    uint32_t peer_ip;       /* the sender's IPv4 address (wire order) */
    uint32_t peer_port;     /* the sender's UDP port */
    int eom, syn;
} slmp_rx_seg_t;

/* Parse the task's frame as a data segment of fixed-size segments. Returns 1
 * if it is one; 0 if not (counted: bad frame, an ACK, misaligned, too
 * large; nothing to ACK). */
static inline int slmp_rx_parse(task_t *t, uint32_t seg, slmp_rx_seg_t *sg)
{
    uint8_t *p = (uint8_t *)t->pkt_mem;
    uint32_t len;
    enum slmp_frame_error fe = slmp_frame_check(p, t->pkt_mem_size, &len);
    if (fe != SLMP_FRAME_OK) {
        slmp_count(SLMP_CTR_BAD_FRAME, fe);
        return 0;
    }
    slmp_pkt_hdr_t *h = (slmp_pkt_hdr_t *)p;
    uint16_t flags = slmp_flags(&h->slmp_hdr);
    if (flags & SLMP_FLAG_ACK) {
        slmp_count(SLMP_CTR_NOT_DATA, flags);
        return 0;
    }
    uint32_t off = slmp_offset(&h->slmp_hdr);
    int eom = (flags & SLMP_FLAG_EOM) != 0;
    /* Fixed-size segments make offset / seg a segment index: every segment
     * but the EOM one is full, the EOM one at most full. */
    if (seg == 0 || seg > SLMP_SEG_MAX || off % seg != 0 || len > seg || (!eom && len != seg)) {
        slmp_count(SLMP_CTR_MISALIGNED, off);
        return 0;
    }
    uint32_t idx = off / seg;
    if (idx >= SLMP_SEGS_MAX) {
        slmp_count(SLMP_CTR_TOO_LARGE, off);
        return 0;
    }
    sg->frame = p;
    sg->payload = p + SLMP_FRAME_HDR_LEN;
    sg->len = len;
    sg->msg = slmp_msg_id(&h->slmp_hdr);
    sg->off = off;
    sg->idx = idx;
    sg->slot = sg->msg % SLMP_SLOTS;
    sg->peer_ip = h->ip_hdr.saddr;
    sg->peer_port = ntohs(h->udp_hdr.src_port);
    sg->eom = eom;
    sg->syn = (flags & SLMP_FLAG_SYN) != 0;
    return 1;
}

/* Send FPsPIN's ACK of the segment, in place over its headers (the payload
 * behind them is already in host memory). */
static inline void slmp_rx_ack(uint8_t *frame)
{
    uint32_t n = slmp_make_ack(frame, frame);
#ifdef SOFTSPIN_SABOTAGE
    ((slmp_pkt_hdr_t *)frame)->slmp_hdr.flags |= htons(SLMP_FLAG_SYN); /* a wrong ACK: the tests must see it */
#endif
    if (spin_send_packet(frame, n, NULL) == SPIN_OK)
        slmp_count(SLMP_CTR_ACK, n);
    else
        slmp_count(SLMP_CTR_CMD_FAILED, 0);
}

enum slmp_rx_claim_result {
    SLMP_RX_NEW,  /* segment not seen yet: place it, then slmp_rx_mark */
    SLMP_RX_SEEN, /* its bit is set: skip placement, slmp_rx_mark counts a duplicate */
    SLMP_RX_STOP, /* slot busy (counted, no ACK) or message done (counted, ACKed): return */
};

static inline int slmp_rx_same_key(volatile slmp_slot_t *s, const slmp_rx_seg_t *sg)
{
    return s->msg == sg->msg && s->peer_ip == sg->peer_ip && s->peer_port == sg->peer_port;
}

/* Claim the segment's message slot and say whether the segment is new. */
static inline enum slmp_rx_claim_result slmp_rx_claim(volatile slmp_slot_t *s, slmp_rx_seg_t *sg)
{
    uint32_t tag = sg->msg / SLMP_SLOTS + 1;
    uint32_t held = __atomic_load_n(&s->tag, __ATOMIC_SEQ_CST);
    for (uint32_t spins = 0; spins < SLMP_CLAIM_SPINS; spins++) {
        if (held == SLMP_TAG_CLAIMING) {
            held = __atomic_load_n(&s->tag, __ATOMIC_SEQ_CST);
            continue;
        }
        int tomb = held == SLMP_TAG_EVICTED || held == SLMP_TAG_DELIVERED;
        if (held != 0 && !(tomb && !slmp_rx_same_key(s, sg)))
            break;
        /* Free, or another message's tombstone: take it. The key is written
         * under SLMP_TAG_CLAIMING so no task reads half of it. A failed CAS
         * loads what won (often this message's own first task). */
        if (__atomic_compare_exchange_n(&s->tag, &held, SLMP_TAG_CLAIMING, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            s->msg = sg->msg;
            s->peer_ip = sg->peer_ip;
            s->peer_port = sg->peer_port;
            __atomic_store_n(&s->tag, tag, __ATOMIC_SEQ_CST);
            held = tag;
            break;
        }
    }
    if (held == SLMP_TAG_DELIVERED && slmp_rx_same_key(s, sg)) {
        /* This message was stored and its slot retired: a late
         * retransmission (its ACK was lost). */
        slmp_count(SLMP_CTR_AFTER_DONE, sg->off);
        if (sg->syn)
            slmp_rx_ack(sg->frame);
        return SLMP_RX_STOP;
    }
    if (held != tag || !slmp_rx_same_key(s, sg)) {
        /* Another message (or sender), a slot being retired, or this
         * message evicted: no ACK, the sender retries later. */
        slmp_count(SLMP_CTR_SLOT_BUSY, held);
        return SLMP_RX_STOP;
    }
    __atomic_fetch_add(&s->seen, 1, __ATOMIC_SEQ_CST);
    uint32_t done = __atomic_load_n(&s->done, __ATOMIC_SEQ_CST);
    if (done) {
        /* The host may already reuse the buffer: do not write. ACK (the
         * first ACK may have been lost), unless the host has yet to store
         * the message and asked to wait for it. */
        slmp_count(SLMP_CTR_AFTER_DONE, sg->off);
        if (sg->syn && (done == SLMP_DONE_STORED || !(slmp_config_flags() & SLMP_CFG_ACK_AFTER_HOST)))
            slmp_rx_ack(sg->frame);
        return SLMP_RX_STOP;
    }
    return (s->bits[sg->idx / 32] & (1u << (sg->idx % 32))) ? SLMP_RX_SEEN : SLMP_RX_NEW;
}

/* After the payload's DMA is done: set the segment's bit; only the task
 * that set it adds the bytes. */
static inline void slmp_rx_mark(volatile slmp_slot_t *s, const slmp_rx_seg_t *sg)
{
    uint32_t bit = 1u << (sg->idx % 32);
    uint32_t old = __atomic_fetch_or(&s->bits[sg->idx / 32], bit, __ATOMIC_SEQ_CST);
    if (!(old & bit)) {
        __atomic_fetch_add(&s->received, sg->len, __ATOMIC_SEQ_CST);
        slmp_count(SLMP_CTR_SEGMENT, sg->len);
    } else {
        slmp_count(SLMP_CTR_DUPLICATE, sg->len);
    }
}

/* Are segments 0..last all present? */
static inline int slmp_rx_all_present(volatile slmp_slot_t *s, uint32_t last)
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
static inline void slmp_rx_maybe_complete(volatile slmp_slot_t *s, const slmp_rx_seg_t *sg, uint32_t seg,
                                          uint64_t host_ref)
{
    uint32_t total = __atomic_load_n(&s->total, __ATOMIC_SEQ_CST);
    if (total == 0 || __atomic_load_n(&s->received, __ATOMIC_SEQ_CST) != total - 1)
        return;
    uint32_t len = total - 1;
    uint32_t last = len == 0 ? 0 : (len - 1) / seg;
    if (!slmp_rx_all_present(s, last)) {
        /* Equal bytes with a hole: segments past the EOM were counted. */
        slmp_count(SLMP_CTR_EOM_CONFLICT, len);
        return;
    }
    uint32_t zero = 0;
    if (!__atomic_compare_exchange_n(&s->done, &zero, SLMP_DONE_POSTED, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        return;
    slmp_done_note_t note = {sg->msg, len, sg->slot};
    if (spin_notify(&note, sizeof note, host_ref, NULL) == 0)
        slmp_count(SLMP_CTR_COMPLETE, len);
    else
        slmp_count(SLMP_CTR_CMD_FAILED, 1);
}

/* The end of every accepted segment: record the EOM's length (or see a
 * segment past it), complete if this task is the last, ACK a SYN segment.
 * host_ref goes into the notification (the message slot's host address). */
static inline void slmp_rx_finish(volatile slmp_slot_t *s, slmp_rx_seg_t *sg, uint32_t seg, uint64_t host_ref)
{
    if (sg->eom) {
        uint32_t want = sg->off + sg->len + 1, had = 0;
        if (!__atomic_compare_exchange_n(&s->total, &had, want, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) &&
            had != want)
            slmp_count(SLMP_CTR_EOM_CONFLICT, sg->off);
    } else {
        uint32_t total = __atomic_load_n(&s->total, __ATOMIC_SEQ_CST);
        if (total != 0 && sg->off >= total - 1)
            slmp_count(SLMP_CTR_EOM_CONFLICT, sg->off);
    }
    slmp_rx_maybe_complete(s, sg, seg, host_ref);
    if (!sg->syn)
        return;
    /* Complete but not stored yet: with SLMP_CFG_ACK_AFTER_HOST the ACK
     * waits for the retransmission (slmp_rx_claim answers it once stored). */
    uint32_t done = __atomic_load_n(&s->done, __ATOMIC_SEQ_CST);
    if (done && done != SLMP_DONE_STORED && (slmp_config_flags() & SLMP_CFG_ACK_AFTER_HOST))
        return;
    slmp_rx_ack(sg->frame);
}

/* The host address of the window (task_t's two halves). */
static inline uint64_t slmp_host_base(const task_t *t)
{
    return ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
}

#endif
