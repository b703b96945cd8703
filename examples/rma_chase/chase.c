/*
 * rma_chase: handler-initiated RMA (sPIN's network actions, seed 004 §3 and
 * Appendix; docs/rma.md "Initiator") on the SDK's initiator API
 * (sdk/include/spin_rma_ops.h). Linked with examples/rma_target/handler.c:
 * one image serves requests, completes responses and runs these commands;
 * its payload handler is rma_chase_ph.
 *
 * A command frame (UDP to CHASE_PORT, payload chase_cmd_t) makes the handler:
 *  - CHASE_OP_CHASE: pointer chasing, as multichase and DiAD's latency test
 *    (seed 003 §IV): `len` dependent 8-byte gets from node `rank`'s window,
 *    each at the offset the previous one returned (got into host memory at
 *    `local`, then read back), starting at `offset`; it writes the last
 *    value, the hops done and the status to host memory at `local` + 8.
 *    The NIC-served remote-read latency benchmark's kernel.
 *  - CHASE_OP_PUT_DEVICE: put from device: `len` bytes of a pattern built in
 *    NIC memory (byte i = arg + 7 i) to `offset`; its status at `local`.
 *  - CHASE_OP_PUT_HOST: put from host: `len` bytes of this node's host
 *    memory at `local` + 32 to `offset`; its status at `local`.
 *  - CHASE_OP_ATOMICS: fetch-and-add of `arg` on the 8-byte word at
 *    `offset`, then compare-and-swap of that word from the value it left to
 *    `len`; status and old value of each at `local` (4 x u64).
 * Every result is written to host memory (spin_dma_to_host) as
 * little-endian u64s; the host reads them.
 */
#include <spin.h>
#include <spin_rma_ops.h>

#define CHASE_PORT 21329
#define CHASE_MAGIC 0x45534843u /* "CHSE" */
#define CHASE_OP_CHASE 1
#define CHASE_OP_PUT_DEVICE 2
#define CHASE_OP_PUT_HOST 3
#define CHASE_OP_ATOMICS 4
#define CHASE_DEV_BYTES 4096

typedef struct chase_cmd {
    uint32_t magic;
    uint32_t op;
    uint32_t rank;
    uint32_t key;
    uint64_t offset; /* in the remote window */
    uint64_t local;  /* offset in this ECTX's host window */
    uint32_t len;
    uint32_t arg;
} __attribute__((packed)) chase_cmd_t;

void rma_target_ph(handler_args_t *args);

static uint8_t dev_buf[CHASE_DEV_BYTES] __attribute__((aligned(8)));
static spin_lock_t dev_lock;

/* Write `n` u64s to host memory at `host`. */
static void results(uint64_t host, const uint64_t *v, uint32_t n)
{
    spin_cmd_t h;
    if (spin_dma_to_host(host, (uint32_t)v, n * 8, false, &h) == SPIN_OK)
        spin_cmd_wait(h);
}

static uint32_t op_wait(int issued, spin_rma_t h, uint64_t *value)
{
    uint32_t status = RMA_STATUS_FAILED;
    if (issued != SPIN_OK || spin_rma_wait(h, &status, value) != SPIN_OK)
        return RMA_STATUS_FAILED;
    return status;
}

static void chase(const chase_cmd_t *c, uint64_t base)
{
    uint64_t at = c->offset, scratch = base + c->local, out[3] = {0, 0, 0};
    uint64_t word __attribute__((aligned(8))) = 0;
    uint32_t status = RMA_STATUS_OK, hops = 0;
    for (; hops < c->len; hops++) {
        spin_rma_t h;
        status = op_wait(spin_rma_get(c->rank, c->key, at, scratch, 8, &h), h, 0);
        if (status != RMA_STATUS_OK)
            break;
        spin_cmd_t d;
        if (spin_dma_from_host(scratch, (uint32_t)&word, 8, false, &d) != SPIN_OK || spin_cmd_wait(d) != SPIN_OK) {
            status = RMA_STATUS_FAILED;
            break;
        }
        at = word;
    }
    out[0] = at;
    out[1] = hops;
    out[2] = status;
    results(scratch + 8, out, 3);
}

static void command(const chase_cmd_t *c, uint64_t base)
{
    spin_rma_t h;
    uint64_t out[4] = {0, 0, 0, 0};
    switch (c->op) {
    case CHASE_OP_CHASE:
        chase(c, base);
        return;
    case CHASE_OP_PUT_DEVICE:
        if (c->len > CHASE_DEV_BYTES) {
            out[0] = RMA_STATUS_MALFORMED;
            break;
        }
        /* One put from the buffer at a time: it must stay unchanged until done. */
        spin_lock_lock(&dev_lock);
        for (uint32_t i = 0; i < c->len; i++)
            dev_buf[i] = (uint8_t)(c->arg + 7 * i);
        out[0] = op_wait(spin_rma_put(c->rank, c->key, c->offset, dev_buf, c->len, &h), h, 0);
        spin_lock_unlock(&dev_lock);
        break;
    case CHASE_OP_PUT_HOST:
        out[0] = op_wait(spin_rma_put_from_host(c->rank, c->key, c->offset, base + c->local + 32, c->len, &h), h, 0);
        break;
    case CHASE_OP_ATOMICS:
        out[0] = op_wait(spin_rma_fetch_add(c->rank, c->key, c->offset, 8, c->arg, &h), h, &out[1]);
        out[2] = op_wait(spin_rma_cas(c->rank, c->key, c->offset, 8, out[1] + c->arg, c->len, &h), h, &out[3]);
        break;
    default:
        out[0] = RMA_STATUS_MALFORMED;
        break;
    }
    results(base + c->local, out, 4);
}

__handler__ void rma_chase_ph(handler_args_t *args)
{
    task_t *t = args->task;
    const uint8_t *f = (const uint8_t *)t->pkt_mem;
    uint32_t len = t->pkt_mem_size;
    if (len >= 42 + sizeof(chase_cmd_t) && f[12] == 0x08 && f[13] == 0x00 && f[14 + 9] == IP_PROTO_UDP &&
        rma_get16(f + 36) == CHASE_PORT) {
        chase_cmd_t c;
        memcpy(&c, f + 42, sizeof c);
        uint64_t base = ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
        if (c.magic == CHASE_MAGIC && c.local <= t->host_mem_size && t->host_mem_size - c.local >= 32) {
            command(&c, base);
            return;
        }
    }
    rma_target_ph(args);
}
