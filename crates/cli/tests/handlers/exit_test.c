/*
 * Handlers for the exit-status tests of crates/cli/tests/sim.rs: each ends
 * in a different way, so `softspin sim` and `softspin isa handler` must
 * report each with its own status.
 */
#include <spin.h>
#include <assert.h>
#include <stdlib.h>

/* Returns normally. */
__handler__ void ok_ph(handler_args_t *args) { (void)args; }

/* Fails an assert: a handler error, not a success. */
__handler__ void assert_ph(handler_args_t *args)
{
    assert(args->task->pkt_mem_size == 0);
}

/* exit(3): a handler error. */
__handler__ void exit3_ph(handler_args_t *args)
{
    (void)args;
    exit(3);
}

/* Loads from address 0x40, outside every window: a fault. */
__handler__ void fault_ph(handler_args_t *args)
{
    (void)args;
    (void)*(volatile uint32_t *)0x40;
}

/* Busy for a few microseconds, so packets pile up in a small buffer. */
__handler__ void slow_ph(handler_args_t *args)
{
    (void)args;
    for (volatile int i = 0; i < 2000; i++)
        ;
}
