/*
 * filtering (seed 001 §4.3, "packet filtering/rewriting"): look the packet's
 * source IP up in an application-defined hash table in L2; on a hit,
 * overwrite the UDP destination port with the entry's value (port
 * redirection). Every packet, rewritten or not, is then DMAed to its slot in
 * host memory (message id * slot size).
 *
 * The table is built by the host: 2^k slots of {key, port}, key 0 = empty,
 * open addressing with linear probing; slot = FNV-1a (32-bit) of the key's
 * four bytes, xor-folded to k bits.
 */
#include <spin.h>

#define HDR 28 /* IP-first frames: IP + UDP headers */
/* task_t is packed (PsPIN's layout), so its fields would be read byte by
 * byte; the runtime places it word-aligned, and saying so gives word loads. */
#define TASK(args) ((task_t *)__builtin_assume_aligned((args)->task, 4))
#define SRC_IP 12
#define UDP_DST 22

struct entry {
    uint32_t key; /* source IP (as the frame holds it); 0 = empty slot */
    uint32_t port;
};

/* Set by the host before activation. */
struct entry *filter_table;
uint32_t filter_bits;  /* the table has 1 << filter_bits slots */
uint32_t filter_slot;  /* bytes per packet slot in host memory */

static inline uint32_t fnv1a(uint32_t key)
{
    uint32_t h = 2166136261u;
    h = (h ^ (key & 0xff)) * 16777619u;
    h = (h ^ ((key >> 8) & 0xff)) * 16777619u;
    h = (h ^ ((key >> 16) & 0xff)) * 16777619u;
    h = (h ^ (key >> 24)) * 16777619u;
    return h;
}

__handler__ void filtering_ph(handler_args_t *args)
{
    task_t *t = TASK(args);
    uint8_t *pkt = (uint8_t *)t->pkt_mem;
    uint32_t len = t->pkt_mem_size;
    if (len < HDR)
        return;
    uint32_t ip = *(const uint32_t *)(pkt + SRC_IP);
    if (ip != 0) {
        const struct entry *tab = filter_table;
        uint32_t bits = filter_bits, mask = (1u << bits) - 1;
        uint32_t h = fnv1a(ip);
        uint32_t i = ((h >> bits) ^ h) & mask; /* xor-fold: the high bits count too */
        /* Probing ends at the key or an empty slot; the bound only guards a
         * full table. */
        for (uint32_t n = 0; n <= mask; n++) {
            uint32_t k = tab[i].key;
            if (k == ip) {
                *(uint16_t *)(pkt + UDP_DST) = (uint16_t)tab[i].port;
                break;
            }
            if (k == 0)
                break;
            i = (i + 1) & mask;
        }
    }
    uint32_t slot = filter_slot;
    uint64_t host = (((uint64_t)t->host_mem_high << 32) | t->host_mem_low) + (uint64_t)t->flow_id * slot;
    /* No wait: the task completes only when its DMA has, and the HPU is free
     * for the next packet meanwhile. */
    spin_dma_to_host(host, (uint32_t)pkt, len < slot ? len : slot, false, NULL);
}
