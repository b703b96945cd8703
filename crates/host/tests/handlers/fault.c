/* Handlers for crates/host/tests/errors.rs. */
#include <spin.h>

/* Store outside every window: one handler error per packet, quickly. */
__handler__ void store_fault_ph(handler_args_t *args)
{
    (void)args;
    *(volatile uint32_t *)0x40 = 1;
}
