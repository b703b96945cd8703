/*
 * Handlers for crates/cli/tests/cli_results.rs: the task descriptor as a
 * handler sees it, stack and scratchpad misuse, per-message output for
 * `softspin sim --records/--stdout` and `softspin isa handler`.
 */
#include <spin.h>

static inline uint64_t host_base(const task_t *t)
{
    return ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
}

/* Copy task_t to host offset 0 and handler_args_t to host offset 256. */
__handler__ void task_dump_ph(handler_args_t *args)
{
    task_t *t = args->task;
    spin_cmd_t h;
    spin_dma_to_host(host_base(t), (uint32_t)t, sizeof(task_t), false, &h);
    spin_cmd_wait(h);
    spin_dma_to_host(host_base(t) + 256, (uint32_t)args, sizeof(handler_args_t), false, &h);
    spin_cmd_wait(h);
}

/* 4 KiB of locals, touched from the top down: fits an 8 KiB stack, not the
 * PsPIN profile's 1 KiB (hpu_stack_size), where the first store below the
 * stack hits the guard. */
__handler__ void stack_hog_ph(handler_args_t *args)
{
    uint8_t buf[4096];
    /* The array escapes, so the compiler keeps all 4 KiB of it. */
    __asm__ volatile("" : : "r"(buf) : "memory");
    for (int i = 4095; i >= 0; i -= 64)
        ((volatile uint8_t *)buf)[i] = (uint8_t)i;
    __asm__ volatile("" : : "r"(buf) : "memory");
    (void)args;
}

/* Locals of N bytes touched from the bottom up: on the PsPIN profile's 1 KiB
 * stack the first store lands N - 1 KiB below the stack, past any fixed
 * guard (issue 24: 2048 bytes gave a bare store fault). */
#define LOCALS_PH(N)                                                       \
    __handler__ void locals_##N##_ph(handler_args_t *args)                 \
    {                                                                      \
        uint8_t buf[N];                                                    \
        __asm__ volatile("" : : "r"(buf) : "memory");                      \
        for (int i = 0; i < N; i += 64)                                    \
            ((volatile uint8_t *)buf)[i] = (uint8_t)i;                     \
        __asm__ volatile("" : : "r"(buf) : "memory");                      \
        (void)args;                                                        \
    }
LOCALS_PH(1100)
LOCALS_PH(2048)
LOCALS_PH(8192)

/* A plain store through a NULL pointer (no scratchpad involved). */
__handler__ void null_store_ph(handler_args_t *args)
{
    volatile uint32_t *p = (volatile uint32_t *)(uintptr_t)args->hpu_id;
    *p = 1; /* hpu_id is 0 for isa handler */
}

/* Uses its home cluster's scratchpad (a null pointer without one). */
__handler__ void scratch_ph(handler_args_t *args)
{
    task_t *t = args->task;
    volatile uint32_t *s = (volatile uint32_t *)t->scratchpad[args->cluster_id];
    s[1] += 1;
}

/* One host-direct write per message: host[8 * flow_id] = 3 * flow_id + 1. */
__handler__ void record_ph(handler_args_t *args)
{
    task_t *t = args->task;
    spin_host_write(host_base(t) + 8 * (uint64_t)t->flow_id, 3 * (uint64_t)t->flow_id + 1, false);
}

/* A line of output per packet, naming the message. */
__handler__ void hello_ph(handler_args_t *args)
{
    printf("hello from message %u\n", (unsigned)args->task->flow_id);
}

/* Every handler kind, for `isa handler --kind`. */
volatile uint32_t kinds;
__handler__ void kinds_hh(handler_args_t *args) { (void)args; kinds |= 1; printf("hh\n"); }
__handler__ void kinds_th(handler_args_t *args) { (void)args; kinds |= 4; printf("th\n"); }
