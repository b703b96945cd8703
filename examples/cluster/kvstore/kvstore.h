/*
 * Distributed key-value store (seed 004 §5.4, "Distributed Key-Value
 * Stores"): what the owner's handlers (handler.c), the C client (client.c)
 * and the Python scripts (run, workers.py: common.defines reads the
 * #defines) agree on. The paper's two hash functions are one FNV-1a hash
 * of the key: owner node = h mod nodes, bucket = (h / nodes) mod buckets.
 *
 * Request: one use-case datagram (../uc.h), mode UC_MODE_KV_PUT or
 * UC_MODE_KV_GET, the requester's rank as src, data (little-endian):
 *   0 reply slot u16 | 2 key length u16 | 4 value length u16 | 6 zero u16
 *   8 key | value (a put's; a get has none)
 * Reply: one RMA put from the owner's NIC into the requester's window at
 * UC_KV_REPLY + slot * UC_KV_SLOT_SIZE, a record (little-endian):
 *   0 seq u32 | 4 status u32 | 8 value length u32 | 12 check u32 | 16 value
 * check = FNV-1a over bytes 0..12 and the value: the target's DMA write is
 * a memcpy of no defined byte order, so the requester takes the record
 * only once seq and check match (no second put to order a done word).
 *
 * The table, in the owner's host memory (its window): UC_KV_BUCKETS heads
 * (u32, entry index + 1, 0 = empty) at UC_KV_TABLE; entries of
 * UC_KV_ENTRY bytes at UC_KV_POOL: next u32 (index + 1) | key length u16 |
 * value length u16 | key[UC_KV_KEY_MAX] | value[UC_KV_VAL_MAX]. A new key
 * is linked at the head of its bucket's chain.
 */
#ifndef UC_KVSTORE_H
#define UC_KVSTORE_H

#include <stdint.h>

#define UC_KV_FNV_BASIS 0x811c9dc5u /* FNV-1a, 32 bits */
#define UC_KV_FNV_PRIME 0x01000193u

#define UC_KV_REQ_HDR 8
#define UC_KV_KEY_MAX 32
#define UC_KV_VAL_MAX 1024
#define UC_KV_REC_HDR 16

/* Window layout (below UC_WINDOW). */
#define UC_KV_REPLY 0x1000    /* reply records, one slot per request in flight */
#define UC_KV_SLOT_SIZE 0x800 /* >= UC_KV_REC_HDR + UC_KV_VAL_MAX */
#define UC_KV_SLOTS 8
#define UC_KV_TABLE 0x8000    /* bucket heads */
#define UC_KV_BUCKETS 128
#define UC_KV_POOL 0x10000    /* entries */
#define UC_KV_ENTRY_HDR 8
#define UC_KV_ENTRY 1064      /* UC_KV_ENTRY_HDR + UC_KV_KEY_MAX + UC_KV_VAL_MAX */
#define UC_KV_ENTRIES 1900    /* UC_KV_POOL + 1900 * 1064 fits UC_WINDOW */
/* Chain steps a request may take, at most: the handler stays well inside
 * the watchdog however long the host's chains (seed 004: "abort after a
 * fixed number of steps"). */
#define UC_KV_MAX_STEPS 64
/* Ranks whose last request seq the owner keeps: a requester's seqs only
 * grow (one request at a time, a resend takes the next), so a request not
 * above the last one served is a duplicate or a late copy the link made,
 * dropped: applied again it could undo a newer put of the same key. */
#define UC_KV_MAX_RANKS 1024

/* Handlers waiting for their reply's RMA response at once, at most (as
 * uc.h's UC_MAX_WAITERS, which is too few here: a requester's next request
 * often arrives while the handler of its last one still waits for the
 * response to the reply it already has; 3 requesters make 6 waiters). The
 * rest of the NIC's 32 HPUs stay free for the responses. */
#define UC_KV_MAX_WAITERS 8

/* The clients (Python and C): a request without reply this long is sent
 * again with the next seq, this many times at most. */
#define UC_KV_TIMEOUT_MS 500
#define UC_KV_TRIES 6

/* Reply statuses. */
#define UC_KV_OK 1      /* put stored / get found */
#define UC_KV_MISS 2    /* get: no such key */
#define UC_KV_FULL 3    /* put: no free entry */
#define UC_KV_CHAIN 4   /* chain longer than UC_KV_MAX_STEPS, or broken */
#define UC_KV_DMA 5     /* a host DMA failed */

/* Counters the handlers push (spin_push_counter): index, value. */
#define UC_KV_CTR_BAD 30       /* a malformed request dropped: its length */
#define UC_KV_CTR_NOT_OWNER 31 /* a request for a key another node owns, or from an unknown rank: the rank */
#define UC_KV_CTR_FULL 32      /* a put found no free entry: its seq */
#define UC_KV_CTR_CHAIN 33     /* a chain too long or broken: the bucket */
#define UC_KV_CTR_STALE 34     /* a request at or below its rank's last seq (a duplicate): its seq */

static inline uint32_t uc_kv_fnv(uint32_t h, const uint8_t *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ p[i]) * UC_KV_FNV_PRIME;
    return h;
}

static inline uint32_t uc_kv_owner(uint32_t h, uint32_t nodes) { return h % nodes; }
static inline uint32_t uc_kv_bucket(uint32_t h, uint32_t nodes) { return (h / nodes) % UC_KV_BUCKETS; }

/* A record's check: bytes 0..12 of the record, then its value. */
static inline uint32_t uc_kv_check(const uint8_t *rec, const uint8_t *value, uint32_t len)
{
    return uc_kv_fnv(uc_kv_fnv(UC_KV_FNV_BASIS, rec, 12), value, len);
}

#endif
