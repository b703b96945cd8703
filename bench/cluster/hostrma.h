/* What the host-CPU baseline's server and client (hostserver.c,
 * hostclient.c) share: RMA requests and responses without the NIC.
 *
 * The baseline speaks the RMA wire format of docs/rma.md (the header of
 * sdk/include/spin_rma.h, included, not copied) minus its transport: every
 * packet is kind DATA with seq and ack 0, the server answers each request
 * once, and the client resends a request whose response is late (reads and
 * writes of the same bytes are idempotent). So a request costs the same
 * header bytes and the same at most 1432 payload bytes per packet as one
 * the NIC serves, and the window's memory words are little-endian as in a
 * NIC's host window. */
#ifndef CLUSTER_HOSTRMA_H
#define CLUSTER_HOSTRMA_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../sdk/include/spin_rma.h"
#include "../live/common.h"

/* The window's key: the one `softspin cluster up --window` exports. */
#define HOSTRMA_KEY 1u
/* Field offsets in the header. */
#define HDR(f) offsetof(rma_hdr_t, f)
/* A datagram: header plus the largest payload. */
#define HOSTRMA_PKT (RMA_HDR_LEN + RMA_MAX_PAYLOAD)

/* A request's header: kind DATA, no transport fields. */
static inline void hostrma_request(uint8_t *p, uint32_t op, uint32_t txn, uint64_t off, uint32_t len)
{
    memset(p, 0, RMA_HDR_LEN);
    p[0] = RMA_VERSION;
    p[1] = RMA_KIND_DATA;
    p[2] = (uint8_t)op;
    rma_put16(p + HDR(src_rank), 0); /* the client is node 0 */
    rma_put16(p + HDR(dst_rank), 1); /* the server node 1 */
    rma_put32(p + HDR(txn), txn);
    rma_put32(p + HDR(key), HOSTRMA_KEY);
    rma_put64(p + HDR(offset), off);
    rma_put32(p + HDR(length), len);
}

/* SplitMix64: the seeded generator of the chain and the data patterns
 * (the same sequence as softspin-testkit's Rng, so a seed means one thing). */
static inline uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
#endif
