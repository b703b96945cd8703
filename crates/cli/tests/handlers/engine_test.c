/*
 * Handlers for the engine tests (crates/engine/tests/model.rs). Each does one
 * thing the test checks from the outside: timeline order, host memory,
 * outbound packets, faults.
 */
#include <spin.h>

/* Packets built by the tests carry a little-endian u32 index right after
 * the 28-byte IP/UDP header. */
static inline uint32_t pkt_index(const task_t *t)
{
    return *(const uint32_t *)((const uint8_t *)t->pkt_mem + 28);
}

__handler__ void empty_ph(handler_args_t *args) { (void)args; }

/* Some work so handlers of one message overlap in time. */
static void busy(uint32_t n)
{
    for (volatile uint32_t i = 0; i < n; i++) {
    }
}
__handler__ void order_hh(handler_args_t *a) { (void)a; busy(50); }
__handler__ void order_ph(handler_args_t *a) { busy(20 + pkt_index(a->task) % 7 * 10); }
__handler__ void order_th(handler_args_t *a) { (void)a; busy(10); }

/* Send the packet back as it came. */
__handler__ void echo_ph(handler_args_t *args)
{
    spin_send_packet(args->task->pkt_mem, args->task->pkt_mem_size, NULL);
}

static inline uint64_t host_base(const task_t *t)
{
    return ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
}

/* Copy the whole packet to host memory at index * size, then wait for it. */
__handler__ void dma_ph(handler_args_t *args)
{
    task_t *t = args->task;
    spin_cmd_t h;
    spin_dma_to_host(host_base(t) + (uint64_t)pkt_index(t) * t->pkt_mem_size,
                     (uint32_t)t->pkt_mem, t->pkt_mem_size, false, &h);
    spin_cmd_wait(h);
}

/* Fetch 64 bytes from host memory (at index * 64) into the packet buffer,
 * wait, then send them. */
__handler__ void fromhost_ph(handler_args_t *args)
{
    task_t *t = args->task;
    spin_cmd_t h;
    spin_dma_from_host(host_base(t) + (uint64_t)pkt_index(t) * 64, (uint32_t)t->pkt_mem, 64, false, &h);
    spin_cmd_wait(h);
    spin_send_packet(t->pkt_mem, 64, NULL);
}

/* Host-direct write of (index + 1) * 3 to host slot index. */
__handler__ void hostwrite_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint32_t i = pkt_index(t);
    spin_host_write(host_base(t) + 8 * (uint64_t)i, (uint64_t)(i + 1) * 3, false);
}

/* Faults: odd indexes misbehave, even ones count themselves. */
volatile int32_t good_packets;
__handler__ void fault_ph(handler_args_t *args)
{
    uint32_t i = pkt_index(args->task);
    switch (i % 8) {
    case 1: *(volatile uint32_t *)0x40 = 1; break;                 /* outside every window */
    case 3: __asm__ volatile(".word 0xffffffff"); break;           /* illegal instruction */
    case 5: for (;;) { __asm__ volatile(""); }                     /* watchdog */
    case 7: *(volatile uint32_t *)(uintptr_t)fault_ph = 0; break;  /* code is read-only */
    default: amo_add(&good_packets, 1);
    }
}

/* A handler that reads another ECTX's handler memory must fault. */
__handler__ void peek_ph(handler_args_t *args)
{
    (void)args;
    good_packets = *(volatile int32_t *)0x1C200000;
}

/* Counts packets in handler memory (for multi-ECTX matching). */
volatile int32_t seen;
__handler__ void count_ph(handler_args_t *args)
{
    (void)args;
    amo_add(&seen, 1);
}

/* Ask the host a question (the packet index, inline) and store its answer
 * in host memory at index * 8. Two requests in flight per packet. */
__handler__ void notify_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint32_t i = pkt_index(t);
    uint32_t q[2] = {i, i * 2 + 1};
    spin_notify_t r0, r1;
    spin_notify(&q[0], 4, 0, &r0);
    spin_notify(&q[1], 4, host_base(t), &r1);
    uint64_t a0 = 0, a1 = 0;
    spin_notify_wait(r1, &a1);
    spin_notify_wait(r0, &a0);
    spin_host_write(host_base(t) + 8 * (uint64_t)i, a0 + (a1 << 32), NULL);
}

/* task_t is the HPU's own copy, rewritten for every task (as in PsPIN, whose
 * aggregate_global amo_adds into it): a handler that scribbles over it must
 * not reach the next task on that HPU. */
volatile int32_t task_fresh, task_stale;
__handler__ void scribble_ph(handler_args_t *args)
{
    task_t *t = args->task;
    if (t->pkt_mem_size == 0xffffffffu || t->handler_mem == (void *)0xffffffffu)
        amo_add(&task_stale, 1);
    else
        amo_add(&task_fresh, 1);
    amo_add((volatile int32_t *)&t->scratchpad[0], 1);
    for (uint32_t *w = (uint32_t *)t; w < (uint32_t *)(t + 1); w++)
        *w = 0xffffffffu;
}

/* Checks the ECTX has PsPIN's generic-driver memory (softspin sim
 * --gdriver): a scratchpad on its cluster, handler memory of its own apart
 * from the image's data, a host window; faults otherwise. */
volatile int32_t gdriver_ok;
__handler__ void gdriver_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint32_t c = args->cluster_id;
    uint8_t *own = (uint8_t *)t->handler_mem;
    if (t->scratchpad_size[c] != 400 * 1024 || t->handler_mem_size != 512 * 1024 ||
        t->host_mem_size != 512u << 20 || own <= (uint8_t *)&gdriver_ok)
        *(volatile uint32_t *)0x40 = 1;
    amo_add((volatile int32_t *)t->scratchpad[c], 1);
    own[t->handler_mem_size - 1] = 1;
    amo_add(&gdriver_ok, 1);
}
