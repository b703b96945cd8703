/*
 * Handlers for crates/cli/tests/reproductions.rs (issue 10, "Done when"):
 * each one misbehaves the way a reproduction in the issue did, so the test
 * can check that `softspin sim` / `isa handler` contain it under a 1 GB
 * address-space limit and say why it failed. The handlers the engine's
 * containment tests use too come from crates/engine/tests/handlers/
 * misbehave.c.
 */
#include <spin.h>
#include <spin_notify.h>
#include <stdio.h>
#include <assert.h>

static inline uint64_t host_base(const task_t *t)
{
    return ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
}

/* One line, for --stdout. */
__handler__ void hello_ph(handler_args_t *args) { printf("hello from msg %u\n", (unsigned)args->task->flow_id); }

/* printf in a loop: 2000 lines of 100 bytes per packet. */
__handler__ void printf_flood_ph(handler_args_t *args)
{
    (void)args;
    for (int i = 0; i < 2000; i++)
        printf("%099d\n", i);
}

/* write(1, packet, size) 10000 times per packet: 100 packets of 1 KiB
 * write 1 GB, the address-space limit, in few instructions. */
__handler__ void write_flood_ph(handler_args_t *args)
{
    task_t *t = args->task;
    for (int i = 0; i < 10000; i++)
        softspin_ecall3(SOFTSPIN_SYS_WRITE, 1, (uint32_t)t->pkt_mem, t->pkt_mem_size);
}

/* 100k distinct counter indices per invocation. */
__handler__ void counter_flood_ph(handler_args_t *args)
{
    (void)args;
    for (uint32_t i = 0; i < 100000; i++)
        softspin_ecall2(SOFTSPIN_SYS_PUSH_COUNTER, i, 1);
}

/* A host-direct write just past the window: the NIC must reject it. */
__handler__ void outside_ph(handler_args_t *args)
{
    task_t *t = args->task;
    spin_write_to_host(host_base(t) + t->host_mem_size, 1, NULL);
}

