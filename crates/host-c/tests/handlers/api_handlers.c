/*
 * Handlers for the C API test (tests/api_test.c). Each does one thing the
 * host side checks. Packets are IP-first frames whose UDP payload (at
 * pkt_mem + 28) starts with a little-endian u32 packet index.
 */
#include <spin.h>

volatile uint32_t magic;          /* set by the host (ss_nic_write at its symbol) */
volatile uint32_t *volatile table; /* pointed by the host at ss_nic_alloc'd memory */
volatile int32_t counted;         /* packets seen by count_ph */

static inline uint32_t index_of(const task_t *t)
{
    return *(const uint32_t *)((const uint8_t *)t->pkt_mem + 28);
}

static inline uint64_t host_base(const task_t *t)
{
    return ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
}

/* DMA the payload to host memory at 64 * index, host-write
 * magic * 1000 + table[index] to slot 4096 + 8 * index, echo the packet,
 * push counter 3 and print. */
__handler__ void api_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint32_t i = index_of(t);
    uint8_t *pld = (uint8_t *)t->pkt_mem + 28;
    spin_cmd_t h;
    spin_dma_to_host(host_base(t) + 64 * (uint64_t)i, (uint32_t)pld, t->pkt_mem_size - 28, false, &h);
    spin_cmd_wait(h);
    spin_write_to_host(host_base(t) + 4096 + 8 * (uint64_t)i, (uint64_t)magic * 1000 + table[i], NULL);
    spin_send_packet(t->pkt_mem, t->pkt_mem_size, NULL);
    spin_push_counter(3, i);
    printf("api_ph %u\n", (unsigned)i);
}

/* Ask the host (index inline, host_ref 100 + index); write its answer to
 * host slot 8 * index. */
__handler__ void ask_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint32_t i = index_of(t);
    uint64_t answer = 0;
    spin_notify_call(&i, 4, 100 + i, &answer);
    spin_write_to_host(host_base(t) + 8 * (uint64_t)i, answer, NULL);
}

__handler__ void count_ph(handler_args_t *args)
{
    (void)args;
    amo_add(&counted, 1);
}

/* Store outside every window: a handler error. */
__handler__ void bad_ph(handler_args_t *args)
{
    (void)args;
    *(volatile uint32_t *)0x40 = 1;
}
