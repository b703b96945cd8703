/*
 * pspin_rt.h (FPsPIN profile) - runtime constants FPsPIN handlers use:
 * PAGE_SIZE (one host-DMA page per HPU for the request/response interface)
 * and the cycle-counter call.
 */
#ifndef SOFTSPIN_FPSPIN_PSPIN_RT_H
#define SOFTSPIN_FPSPIN_PSPIN_RT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include "../../../include/util.h"

/* FPsPIN's host-DMA page: HPU i's flag and data live at host offset
 * i * PAGE_SIZE, the pages after CORE_COUNT are the application's. */
#define PAGE_SIZE 4096

/* FPsPIN reads the cycle counter through an ecall to its runtime; softspin
 * HPUs read the mcycle CSR from user code, so no call is needed. */
static inline uint32_t softspin_fpspin_cycles(void)
{
    uint32_t c;
    __asm__ __volatile__("rdcycle %0" : "=r"(c));
    return c;
}


#endif
