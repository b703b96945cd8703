/*
 * pspin_compat: handlers written the way PsPIN's own handlers are (PsPIN
 * headers only, GET_IP_UDP_PLD, init_handlers, NULL/false command
 * arguments), built unchanged by the softspin SDK.
 *
 *   hh  clears this message's state (it runs first and alone);
 *   ph  counts the packet (all messages and per message), xors the UDP
 *       payload's 32-bit words into the message's checksum, and copies the
 *       data to host memory with spin_dma_to_host(..., NULL);
 *   th  writes (packets << 32 | checksum) to the message's result word in
 *       host memory with spin_host_write(..., false).
 *
 * Payload: [u32 byte offset in the message][data]. Host memory: MAX_MSGS
 * result words of 8 bytes, then MAX_MSGS regions of MSG_BYTES.
 */
#include <handler.h>
#include <packets.h>
#include <spin_conf.h>

#define MAX_MSGS 64
#define MSG_BYTES 16384

typedef struct msg_state {
    volatile uint32_t xsum;
    volatile int32_t packets;
} msg_state_t;

volatile int32_t packets_total = 0;
msg_state_t msg_state[MAX_MSGS];

__handler__ void pspin_compat_hh(handler_args_t *args)
{
    task_t *task = args->task;
    msg_state_t *st = &msg_state[task->flow_id % MAX_MSGS];
    st->xsum = 0;
    st->packets = 0;
}

__handler__ void pspin_compat_ph(handler_args_t *args)
{
    task_t *task = args->task;
    uint8_t *pkt_pld_ptr;
    uint32_t pkt_pld_len;
    GET_IP_UDP_PLD(task->pkt_mem, pkt_pld_ptr, pkt_pld_len);
    if (pkt_pld_len < 4 || pkt_pld_len > task->pkt_mem_size)
        return;

    amo_add(&packets_total, 1);
    msg_state_t *st = &msg_state[task->flow_id % MAX_MSGS];
    amo_add(&st->packets, 1);

    /* Checksum: xor of the payload as little-endian words, tail zero-padded. */
    uint32_t x = 0, i = 0;
    for (; i + 4 <= pkt_pld_len; i += 4)
        x ^= *(uint32_t *)(pkt_pld_ptr + i);
    for (uint32_t sh = 0; i < pkt_pld_len; i++, sh += 8)
        x ^= (uint32_t)pkt_pld_ptr[i] << sh;
    amo_xor(&st->xsum, x);

    uint32_t offset = *(uint32_t *)pkt_pld_ptr, len = pkt_pld_len - 4;
    if (len == 0 || offset > MSG_BYTES || len > MSG_BYTES - offset)
        return;
    uint64_t host_address = task->host_mem_high;
    host_address = (host_address << 32) | task->host_mem_low;
    host_address += MAX_MSGS * 8 + (task->flow_id % MAX_MSGS) * MSG_BYTES + offset;
    spin_dma_to_host(host_address, (uint32_t)(pkt_pld_ptr + 4), len, false, NULL);
}

__handler__ void pspin_compat_th(handler_args_t *args)
{
    task_t *task = args->task;
    msg_state_t *st = &msg_state[task->flow_id % MAX_MSGS];
    uint64_t host_address = task->host_mem_high;
    host_address = (host_address << 32) | task->host_mem_low;
    host_address += (task->flow_id % MAX_MSGS) * 8;
    uint64_t result = ((uint64_t)(uint32_t)st->packets << 32) | st->xsum;
    spin_host_write(host_address, result, false);
}

void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th, void **handler_mem_ptr)
{
    volatile handler_fn handlers[] = {pspin_compat_hh, pspin_compat_ph, pspin_compat_th};
    *hh = handlers[0];
    *ph = handlers[1];
    *th = handlers[2];
    *handler_mem_ptr = (void *)msg_state;
}
