/* Payload handler executing NINSTR single-cycle integer instructions
 * (seed 001 Fig. 8). Build with -DNINSTR=x. */
#include <spin.h>

#ifndef NINSTR
#define NINSTR 0
#endif
#define STR_(x) #x
#define STR(x) STR_(x)

__handler__ void ninstr_ph(handler_args_t *args)
{
    (void)args;
    __asm__ volatile(".rept " STR(NINSTR) "\n\taddi t0, t0, 1\n.endr" ::: "t0");
}
