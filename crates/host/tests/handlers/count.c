/* Counts packets twice: in handler memory (per ECTX: task->handler_mem)
 * and in a global (the image's data, shared by the ECTXs of this image). */
#include <spin.h>

volatile int32_t all_packets;

__handler__ void count_ph(handler_args_t *args)
{
    amo_add((volatile int32_t *)args->task->handler_mem, 1);
    amo_add(&all_packets, 1);
}
