/*
 * Handlers for the Python API tests. Packets are one-packet messages sent
 * with Nic.send_message (IP-first frames): the payload starts at byte 28
 * with a little-endian u32 index.
 */
#include <spin.h>

static inline uint32_t pkt_index(const task_t *t)
{
    return *(const uint32_t *)((const uint8_t *)t->pkt_mem + 28);
}

static inline uint64_t host_base(const task_t *t)
{
    return ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
}

/* Send the packet back unchanged. */
__handler__ void echo_ph(handler_args_t *args)
{
    spin_send_packet(args->task->pkt_mem, args->task->pkt_mem_size, NULL);
}

/* Copy the packet to host memory at index * 256. */
__handler__ void dma_ph(handler_args_t *args)
{
    task_t *t = args->task;
    spin_cmd_t h;
    spin_dma_to_host(host_base(t) + (uint64_t)pkt_index(t) * 256, (uint32_t)t->pkt_mem, t->pkt_mem_size, false, &h);
    spin_cmd_wait(h);
}

/* Fetch 64 bytes of host memory at index * 64 and send them. */
__handler__ void fromhost_ph(handler_args_t *args)
{
    task_t *t = args->task;
    spin_cmd_t h;
    spin_dma_from_host(host_base(t) + (uint64_t)pkt_index(t) * 64, (uint32_t)t->pkt_mem, 64, false, &h);
    spin_cmd_wait(h);
    spin_send_packet(t->pkt_mem, 64, NULL);
}

/* Host-direct write of index * 1000 + 7 to host slot index. */
__handler__ void hostwrite_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint32_t i = pkt_index(t);
    spin_host_write(host_base(t) + 8 * (uint64_t)i, (uint64_t)i * 1000 + 7, false);
}

/* Odd indexes store outside every window; even ones count. */
volatile int32_t good;
__handler__ void fault_ph(handler_args_t *args)
{
    if (pkt_index(args->task) & 1)
        *(volatile uint32_t *)0x40 = 1;
    else
        amo_add(&good, 1);
}

/* printf, and engine counter 3 gets the index. */
__handler__ void print_ph(handler_args_t *args)
{
    uint32_t i = pkt_index(args->task);
    printf("packet %u\n", (unsigned)i);
    spin_push_counter(3, i);
}

/* Ask the host about the index twice (inline, then with a reference), store
 * (first answer) + (second answer << 32) at host slot index. */
__handler__ void notify_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint32_t i = pkt_index(t);
    uint32_t q[2] = {i, 100 + i};
    spin_notify_t r0, r1;
    spin_notify(&q[0], 4, 0, &r0);
    spin_notify(&q[1], 4, host_base(t) + 8 * (uint64_t)i, &r1);
    uint64_t a0 = 0, a1 = 0;
    spin_notify_wait(r0, &a0);
    spin_notify_wait(r1, &a1);
    spin_host_write(host_base(t) + 8 * (uint64_t)i, (a0 & 0xffffffffu) | (a1 << 32), false);
}

/* Counts packets in the ECTX's handler memory and in a global of the image
 * (shared by every ECTX of the image when handler memory is their own). */
volatile int32_t all_packets;
__handler__ void hmem_count_ph(handler_args_t *args)
{
    amo_add((volatile int32_t *)args->task->handler_mem, 1);
    amo_add(&all_packets, 1);
}
