/*
 * examples/cluster: what the use cases' handlers and their host scripts
 * (common.py reads the #defines below, so they are defined once) agree on:
 * the application header after UDP, the matching rules' fields, and where
 * things live in each node's host memory (its RMA window, key UC_KEY).
 *
 * A message is a run of UDP datagrams to UC_PORT, each carrying this
 * header (big-endian) and at most UC_CHUNK data bytes:
 *   42 magic u16 | 44 msg id u32 | 48 flags u32 | 52 seq u32 | 56 total u32
 *   60 offset u32 | 64 src rank u16 | 66 mode u16 | 68 data
 * The NIC's rules (uc_rules.toml) take the message id from byte 44 and the
 * end of message from bit 0 of the flags word (byte 48), so header,
 * payload and completion handlers run per message (seed 004 §3).
 */
#ifndef UC_H
#define UC_H

#define UC_PORT 21330
#define UC_MAGIC 0x5543 /* "UC" */
#define UC_HDR 26
#define UC_DATA_OFF 68  /* 14 Ethernet + 20 IPv4 + 8 UDP + UC_HDR */
#define UC_CHUNK 1408   /* data bytes per packet: a multiple of 16 (one complex double) and one RMA packet (<= 1432) */
#define UC_EOM 1        /* flags: the message's last packet */
/* Message ids have their top bit set: the RMA ruleset numbers its messages
 * from 0 in arrival order on the same ECTX, and the two must not meet. */
#define UC_MSG_BIT 0x80000000u

#define UC_MODE_DEVICE 1      /* ping-pong: the header handler puts the pong from device */
#define UC_MODE_HOST 2        /* ping-pong: the completion handler puts it from host memory */
#define UC_MODE_STREAM 3      /* ping-pong: each payload handler sends its packet back */
#define UC_MODE_ACC 4         /* accumulate: payload handlers multiply into host memory */
#define UC_MODE_BC_STORE 5    /* broadcast: the completion handler forwards the whole message to the children */
#define UC_MODE_BC_STREAM 6   /* broadcast: each payload handler forwards its packet to the children */
#define UC_MODE_ALLREDUCE 7   /* allreduce (allreduce/allreduce.h): sum by recursive doubling between the NICs */
#define UC_MODE_BARRIER 8     /* barrier: an allreduce of one int32 per host */
#define UC_MODE_EAGER 9       /* matching: a small message, its data in the packet (matching/matching.h) */
#define UC_MODE_RNDV 10       /* matching: a large message's request to send; the receiver's NIC gets the data */
#define UC_MODE_RAID_WRITE 11 /* raid: a client's write to a data node (raid/raid.h) */
#define UC_MODE_RAID_DELTA 12 /* raid: a delta to the parity node (the host baseline's; the NICs send RMA puts) */
#define UC_MODE_KV_PUT 13     /* key-value store: insert or overwrite (kvstore/kvstore.h) */
#define UC_MODE_KV_GET 14     /* key-value store: look up, the value put into the requester's memory */
#define UC_MODE_BC_DEPOSIT 20 /* broadcast, netsim's rdma/portals baselines: the NIC only deposits; others forward */

/* Host memory of every node (its window, exported under UC_KEY). */
#define UC_KEY 1
#define UC_DONE 0           /* u64: seq of the last round finished for this node (written by the peer's NIC) */
#define UC_RX 0x10000       /* a message's bytes land here (ping data, or the accumulate array) */
#define UC_PONG 0x110000    /* the pong lands here in the pinger's memory */
#define UC_MAX_SIZE 0x100000 /* largest message */
#define UC_WINDOW 0x210000  /* window and host memory per node */

/* Counters the handlers push (spin_push_counter): index, value. */
#define UC_CTR_PONG_FAILED 20   /* an RMA op of a pong or done word failed: its status */
#define UC_CTR_INCOMPLETE 21    /* a message ended with bytes missing: the bytes received */
#define UC_CTR_DMA_FAILED 22    /* a host DMA failed: the offset */
#define UC_CTR_BUSY 23          /* a message refused: UC_MAX_WAITERS handlers already wait for RMA; its seq */

/* Handlers that wait for RMA responses at once, at most: the responses need
 * HPUs of their own, so a flood of messages must not make every HPU wait
 * (it would stall the NIC until the watchdog). A message beyond this gets
 * no answer (counted); its sender sends it again. */
#define UC_MAX_WAITERS 4

#ifdef __riscv
#include <spin_rma.h>
#include <spin_rma_ops.h>

typedef struct uc_pkt {
    uint32_t msg, flags, seq, total, offset, src, mode, len;
    const uint8_t *data;
} uc_pkt_t;

/* 1 if the frame is a well-formed use-case packet (Ethernet/IPv4 without
 * options/UDP to UC_PORT, the magic, its data inside the message and the
 * frame); anything else (RMA frames among them) is not one. */
static inline int uc_parse(const uint8_t *f, uint32_t n, uc_pkt_t *p)
{
    if (n < UC_DATA_OFF || f[12] != 0x08 || f[13] != 0x00 || f[14] != 0x45 || f[23] != 17 ||
        rma_get16(f + 36) != UC_PORT || rma_get16(f + 42) != UC_MAGIC)
        return 0;
    uint32_t udp_len = rma_get16(f + 38);
    if (udp_len < 8 + UC_HDR || 34 + udp_len > n)
        return 0;
    p->msg = rma_get32(f + 44);
    p->flags = rma_get32(f + 48);
    p->seq = rma_get32(f + 52);
    p->total = rma_get32(f + 56);
    p->offset = rma_get32(f + 60);
    p->src = rma_get16(f + 64);
    p->mode = rma_get16(f + 66);
    p->data = f + UC_DATA_OFF;
    p->len = udp_len - 8 - UC_HDR;
    return p->len > 0 && p->len <= UC_CHUNK && p->total <= UC_MAX_SIZE && p->offset <= p->total &&
           p->len <= p->total - p->offset;
}

static inline uint64_t uc_host_base(const task_t *t) { return ((uint64_t)t->host_mem_high << 32) | t->host_mem_low; }

/* Bytes received per message (by message id), so a completion handler can
 * tell a whole message from one that lost packets. */
#define UC_MSG_SLOTS 64

/* Take one of UC_MAX_WAITERS places (1), or none (0, counted). */
static inline int uc_wait_begin(volatile int32_t *waiters, uint32_t seq)
{
    if (amo_add(waiters, 1) < UC_MAX_WAITERS)
        return 1;
    amo_add(waiters, -1);
    spin_push_counter(UC_CTR_BUSY, seq);
    return 0;
}

static inline void uc_wait_end(volatile int32_t *waiters) { amo_add(waiters, -1); }

/* DMA between host memory and NIC memory (L1/L2), waited for; 1 if done. */
static inline int uc_dma_read(uint64_t host, void *nic, uint32_t len)
{
    spin_cmd_t c;
    return spin_dma_from_host(host, (uint32_t)nic, len, false, &c) == SPIN_OK && spin_cmd_wait(c) == SPIN_OK;
}

static inline int uc_dma_write(uint64_t host, const void *nic, uint32_t len)
{
    spin_cmd_t c;
    return spin_dma_to_host(host, (uint32_t)nic, len, false, &c) == SPIN_OK && spin_cmd_wait(c) == SPIN_OK;
}

/* Wait for an op just issued (`issued`: what issuing it returned); its RMA
 * status, FAILED if it was not issued or the wait failed. */
static inline uint32_t uc_op_wait(int issued, spin_rma_t h)
{
    uint32_t status = RMA_STATUS_FAILED;
    if (issued != SPIN_OK || spin_rma_wait(h, &status, 0) != SPIN_OK)
        return RMA_STATUS_FAILED;
    return status;
}

/* Wait for k ops issued together (issued[i]: what issuing op i returned):
 * `status` while they all end OK, else the first failure's status (the
 * caller passes what it kept so far, so the first failure of all stays). */
static inline uint32_t uc_op_wait_all(const int *issued, const spin_rma_t *h, uint32_t k, uint32_t status)
{
    for (uint32_t i = 0; i < k; i++) {
        uint32_t s = uc_op_wait(issued[i], h[i]);
        if (s != RMA_STATUS_OK && status == RMA_STATUS_OK)
            status = s;
    }
    return status;
}
#else
#include <stdint.h>

/* Host programs in C (client.c, host.c): big-endian stores, and the header
 * above at p (the handlers read it with uc_parse, common.py with HDR). */
static inline void uc_put16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void uc_put32(uint8_t *p, uint32_t v)
{
    uc_put16(p, v >> 16);
    uc_put16(p + 2, v);
}

static inline void uc_put_hdr(uint8_t *p, uint32_t msg, uint32_t flags, uint32_t seq, uint32_t total, uint32_t offset,
                              uint32_t src, uint32_t mode)
{
    uc_put16(p, UC_MAGIC);
    uc_put32(p + 2, msg);
    uc_put32(p + 6, flags);
    uc_put32(p + 10, seq);
    uc_put32(p + 14, total);
    uc_put32(p + 18, offset);
    uc_put16(p + 22, src);
    uc_put16(p + 24, mode);
}
#endif
#endif
