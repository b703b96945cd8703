/*
 * raid_parity (seed 004 §5.3): RAID-5 small writes applied by the NIC.
 * Host memory holds a volume striped over NDATA data chunks of `unit` bytes
 * per stripe (data at offset 0, the volume's bytes in order) and one parity
 * chunk per stripe (at offset `parity`, stripe s at parity + s * unit).
 * Each packet carries a 4-byte header (the volume offset of its data) and
 * new data D' that stays within one chunk. The handler fetches old D and
 * old P from host memory, computes P' = P ^ D ^ D' and writes D' and P'
 * back. Packets of different chunks of a stripe update the same parity
 * bytes: the host splits chunks into packets on a grid of `grid` bytes, and
 * a lock per (stripe, grid slot) makes each read-modify-write atomic.
 */
#include <spin.h>

#ifndef NLOCKS
#define NLOCKS 1024 /* a power of two */
#endif

typedef struct {
    uint32_t parity; /* host offset of the parity chunks (= volume size) */
    uint32_t unit;   /* stripe unit (chunk) bytes */
    uint32_t ndata;  /* data chunks per stripe */
    uint32_t grid;   /* packets split chunks at multiples of this */
    uint32_t slots;  /* grid slots per chunk: ceil(unit / grid) */
} raid_layout_t;

raid_layout_t raid_layout = {4 << 20, 64 << 10, 4, 988, 67};
spin_lock_t raid_locks[NLOCKS];

__handler__ void raid_ph(handler_args_t *args)
{
    task_t *t = args->task;
    const uint32_t *pld = (const uint32_t *)((const uint8_t *)t->pkt_mem + 28);
    if (t->pkt_mem_size < 28 + 8)
        return;
    uint32_t len = t->pkt_mem_size - 28 - 4;
    uint32_t off = pld[0];
    const uint32_t *dnew = pld + 1;
    raid_layout_t L = raid_layout; /* one copy out of L2 */
    uint32_t chunk = off / L.unit, in = off - chunk * L.unit;
    uint32_t stripe = chunk / L.ndata;
    uint32_t cl = args->cluster_id;
    uint32_t room = (t->scratchpad_size[cl] / (2 * NB_CORES)) & ~3u;
    if ((len & 3) || len > room || in + len > L.unit || off + len > L.parity)
        return; /* not a request we can serve */

    uint32_t *dold = (uint32_t *)((uint8_t *)t->scratchpad[cl] + args->hpu_id * 2 * room);
    uint32_t *par = dold + room / 4;
    uint64_t host = ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
    uint64_t da = host + off, pa = host + L.parity + stripe * L.unit + in;
    spin_lock_t *lock = &raid_locks[(stripe * L.slots + in / L.grid) & (NLOCKS - 1)];
    spin_cmd_t c1, c2;

    spin_lock_lock(lock);
    spin_dma_from_host(da, (uint32_t)dold, len, false, &c1);
    spin_dma_from_host(pa, (uint32_t)par, len, false, &c2);
    spin_cmd_wait(c1);
    spin_cmd_wait(c2);
    uint32_t i = 0, n = len / 4;
    for (; i + 4 <= n; i += 4) { /* unrolled: loads first, no load-use stalls */
        uint32_t p0 = par[i], p1 = par[i + 1], p2 = par[i + 2], p3 = par[i + 3];
        uint32_t d0 = dold[i], d1 = dold[i + 1], d2 = dold[i + 2], d3 = dold[i + 3];
        uint32_t e0 = dnew[i], e1 = dnew[i + 1], e2 = dnew[i + 2], e3 = dnew[i + 3];
        par[i] = p0 ^ d0 ^ e0;
        par[i + 1] = p1 ^ d1 ^ e1;
        par[i + 2] = p2 ^ d2 ^ e2;
        par[i + 3] = p3 ^ d3 ^ e3;
    }
    for (; i < n; i++)
        par[i] ^= dold[i] ^ dnew[i];
    spin_dma_to_host(pa, (uint32_t)par, len, false, &c1);
    spin_dma_to_host(da, (uint32_t)dnew, len, false, &c2);
    spin_cmd_wait(c1);
    spin_cmd_wait(c2);
    spin_lock_unlock(lock);
}
