/*
 * Handlers for crates/engine/tests/containment.rs: each misbehaves in one
 * way a NIC must contain (floods, theft, endless waits, rejected commands,
 * aborts) and reports what it saw through host-direct writes, which the
 * test reads from the outside. The handlers the CLI's reproductions
 * misbehave with too are in misbehave.c.
 */
#include <spin.h>
#include <spin_notify.h>
#include <stdio.h>
#include <stdlib.h>
#include <assert.h>

static inline uint64_t host_base(const task_t *t)
{
    return ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
}

/* Report `v` in host slot `k` (8 bytes each). */
static inline void report(const task_t *t, uint32_t k, uint64_t v)
{
    spin_write_to_host(host_base(t) + 8 * k, v, NULL);
}

/* printf without end: 200 lines of 99 bytes per packet. */
__handler__ void flood_ph(handler_args_t *args)
{
    (void)args;
    for (int i = 0; i < 200; i++)
        printf("%098d\n", i);
}

/* One counter index per packet, far beyond any counter file; reports the
 * service's result (slot 0) and then pushes a legal index. */
__handler__ void counters_ph(handler_args_t *args)
{
    static uint32_t n;
    uint32_t k = __atomic_fetch_add(&n, 1, __ATOMIC_RELAXED);
    int32_t r = softspin_ecall2(SOFTSPIN_SYS_PUSH_COUNTER, 1000 + k, 1);
    report(args->task, k, (uint64_t)(uint32_t)r);
    softspin_ecall2(SOFTSPIN_SYS_PUSH_COUNTER, 3, 5);
}

/* Tenant A: ask the host, then poll for the answer; report it (slot 0) or
 * 0xdead if it never came. */
__handler__ void ask_ph(handler_args_t *args)
{
    spin_notify_t req;
    uint64_t answer = 0xdead;
    if (spin_notify("hi", 2, 0, &req) != 0)
        return;
    for (int i = 0; i < 20000; i++) {
        bool done = false;
        uint64_t v;
        if (spin_notify_test(req, &done, &v) != 0)
            break;
        if (done) {
            answer = v;
            break;
        }
    }
    report(args->task, 0, answer);
}

/* Tenant B: wait on the ids A's requests got (1..4) and report each
 * result code (slot k). */
__handler__ void thief_ph(handler_args_t *args)
{
    for (uint32_t id = 1; id <= 4; id++) {
        uint64_t v = 0;
        int r = spin_notify_wait(id, &v);
        report(args->task, id, r < 0 ? (uint64_t)(uint32_t)r : v);
    }
}

/* Commands the NIC must refuse; each result code goes to host slot k. */
__handler__ void reject_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint64_t outside = host_base(t) + t->host_mem_size;
    int r;
    r = spin_write_to_host(outside, 1, NULL);
    report(t, 0, (uint64_t)(uint32_t)r);
    r = spin_dma_to_host(outside - 4, (uint32_t)t->pkt_mem, 64, false, NULL);
    report(t, 1, (uint64_t)(uint32_t)r);
    /* 4 KiB of handler memory: larger than any packet slot. */
    r = spin_send_packet(t->handler_mem, 4096, NULL);
    report(t, 2, (uint64_t)(uint32_t)r);
    report(t, 3, 0x600d); /* it went on */
}

__handler__ void exit3_ph(handler_args_t *args)
{
    (void)args;
    exit(3);
}

