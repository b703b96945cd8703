/*
 * The handler crates/cli/tests/gdb.rs debugs with gdb-multiarch: it sums
 * the first bytes of the UDP payload in a function of its own (a breakpoint,
 * an argument, a step, a `finish` with its return value) and keeps the sum
 * where a debugger can read it.
 */
#include <spin.h>

volatile uint32_t last_sum;

__attribute__((noinline)) uint32_t add_up(const uint8_t *p, uint32_t n)
{
    uint32_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += p[i];
    return sum;
}

__handler__ void gdb_ph(handler_args_t *args)
{
    /* The payload starts after the 28-byte IP/UDP header. */
    const uint8_t *payload = (const uint8_t *)args->task->pkt_mem + 28;
    uint32_t sum = add_up(payload, 16);
    last_sum = sum;
}
