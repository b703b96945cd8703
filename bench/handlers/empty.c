/* Empty payload handler: just `ret` (validation, sim_bench). */
#include <spin.h>

__handler__ void empty_ph(handler_args_t *args)
{
    (void)args;
}
