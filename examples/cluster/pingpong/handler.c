/*
 * Ping-pong three ways (seed 004 §4.4.1, Fig. 3): the pong node's handlers,
 * linked with examples/rma_target/handler.c (which serves the pinger's NIC
 * the RMA writes the pongs arrive as). The ping is a use-case message
 * (../uc.h) whose mode says how to answer:
 *  - UC_MODE_DEVICE: one packet; the header handler puts its data from NIC
 *    memory (the packet itself) into the pinger's UC_PONG, then the round's
 *    seq into its UC_DONE: the data never touches this host's memory.
 *  - UC_MODE_HOST: the payload handlers DMA each packet into this host's
 *    UC_RX; once the whole message is there the completion handler puts it
 *    from host memory into the pinger's UC_PONG, then the seq.
 *  - UC_MODE_STREAM: each payload handler sends its packet back to the
 *    pinger's socket (addresses and ports swapped) as it arrives.
 * Every other frame goes to rma_target_ph (RMA requests and responses).
 */
#include <spin.h>
#include <spin_rma_ops.h>
#include "../uc.h"

void rma_target_ph(handler_args_t *args);

static volatile uint32_t msg_bytes[UC_MSG_SLOTS];
static volatile int32_t waiters; /* handlers waiting for RMA responses (uc_wait_begin) */

/* The round's seq into the pinger's UC_DONE, after its pong is written
 * (the wait before it orders the two). */
static void done(const uc_pkt_t *p)
{
    uint64_t word __attribute__((aligned(8))) = p->seq;
    spin_rma_t h;
    uint32_t s = uc_op_wait(spin_rma_put(p->src, UC_KEY, UC_DONE, &word, 8, &h), h);
    if (s != RMA_STATUS_OK)
        spin_push_counter(UC_CTR_PONG_FAILED, s);
}

__handler__ void pingpong_hh(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p))
        return;
    msg_bytes[t->flow_id % UC_MSG_SLOTS] = 0; /* runs first and alone on the message */
    if (p.mode != UC_MODE_DEVICE)
        return;
    if (!(p.flags & UC_EOM) || p.offset != 0 || p.len != p.total) {
        spin_push_counter(UC_CTR_INCOMPLETE, p.len); /* device mode is one packet */
        return;
    }
    if (!uc_wait_begin(&waiters, p.seq))
        return;
    spin_rma_t h;
    uint32_t s = uc_op_wait(spin_rma_put(p.src, UC_KEY, UC_PONG, p.data, p.len, &h), h);
    if (s == RMA_STATUS_OK)
        done(&p);
    else
        spin_push_counter(UC_CTR_PONG_FAILED, s);
    uc_wait_end(&waiters);
}

/* Swap source and destination (MAC, IPv4, UDP port) in place and send. */
static void send_back(uint8_t *f, uint32_t n)
{
    uint8_t tmp[6];
    memcpy(tmp, f, 6);
    memcpy(f, f + 6, 6);
    memcpy(f + 6, tmp, 6);
    memcpy(tmp, f + 26, 4);
    memcpy(f + 26, f + 30, 4);
    memcpy(f + 30, tmp, 4);
    memcpy(tmp, f + 34, 2);
    memcpy(f + 34, f + 36, 2);
    memcpy(f + 36, tmp, 2);
    /* Only whole 16-bit words moved: the IPv4 and UDP checksums hold. */
    spin_cmd_t c;
    if (spin_send_packet(f, n, &c) == SPIN_OK)
        spin_cmd_wait(c);
}

__handler__ void pingpong_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p)) {
        rma_target_ph(args);
        return;
    }
    if (p.mode == UC_MODE_STREAM) {
        send_back((uint8_t *)t->pkt_mem, 34 + rma_get16((const uint8_t *)t->pkt_mem + 38));
    } else if (p.mode == UC_MODE_HOST) {
        if (t->host_mem_size < UC_RX + UC_MAX_SIZE)
            return;
        spin_cmd_t c;
        if (spin_dma_to_host(uc_host_base(t) + UC_RX + p.offset, (uint32_t)p.data, p.len, false, &c) != SPIN_OK ||
            spin_cmd_wait(c) != SPIN_OK) {
            spin_push_counter(UC_CTR_DMA_FAILED, p.offset);
            return;
        }
        amo_add((volatile int32_t *)&msg_bytes[t->flow_id % UC_MSG_SLOTS], (int32_t)p.len);
    }
}

/* Put from host in RMA_TXN_MAX_LEN pieces, a few in flight at once (each
 * waits for an HPU to take its responses: keep fewer than the HPUs). */
#define PUTS_IN_FLIGHT 4

__handler__ void pingpong_th(handler_args_t *args)
{
    task_t *t = args->task;
    uc_pkt_t p;
    if (!uc_parse((const uint8_t *)t->pkt_mem, t->pkt_mem_size, &p) || p.mode != UC_MODE_HOST)
        return;
    uint32_t got = msg_bytes[t->flow_id % UC_MSG_SLOTS];
    if (got != p.total) { /* a packet lost or duplicated: no pong, the pinger resends */
        spin_push_counter(UC_CTR_INCOMPLETE, got);
        return;
    }
    if (!uc_wait_begin(&waiters, p.seq))
        return;
    uint64_t rx = uc_host_base(t) + UC_RX;
    uint32_t status = RMA_STATUS_OK;
    for (uint32_t off = 0; off < p.total;) {
        spin_rma_t h[PUTS_IN_FLIGHT];
        int issued[PUTS_IN_FLIGHT];
        uint32_t k = 0;
        for (; k < PUTS_IN_FLIGHT && off < p.total; k++) {
            uint32_t len = p.total - off < RMA_TXN_MAX_LEN ? p.total - off : RMA_TXN_MAX_LEN;
            issued[k] = spin_rma_put_from_host(p.src, UC_KEY, UC_PONG + off, rx + off, len, &h[k]);
            off += len;
        }
        status = uc_op_wait_all(issued, h, k, status);
    }
    if (status == RMA_STATUS_OK)
        done(&p);
    else
        spin_push_counter(UC_CTR_PONG_FAILED, status);
    uc_wait_end(&waiters);
}
