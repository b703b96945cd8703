/*
 * fpspin_rt.c - data of the FPsPIN profile's runtime, linked into every
 * image `softspin build --profile fpspin` makes: the host data block (host
 * response flags and performance counters, found by the host through its
 * symbol) and the per-HPU request numbers of spin_host.h.
 */
#include "pspin.h"
#include "spin_host.h"

volatile struct host_data __host_data;
volatile uint8_t dma_idx[CORE_COUNT];

/* umm_malloc's heap, which FPsPIN's runtime declares and leaves unset (its
 * hpu.c does not call umm_init): a handler that wants the allocator sets
 * both and calls umm_init itself. */
void *UMM_MALLOC_CFG_HEAP_ADDR;
uint32_t UMM_MALLOC_CFG_HEAP_SIZE;

#include <math.h>
#include <string.h>

/* Square root by Newton's method from a first guess that halves the
 * exponent; exact to the last bit or one below, enough for the statistics
 * handlers compute with it. Negative or NaN input gives NaN. */
__attribute__((weak)) double sqrt(double x)
{
    if (x != x || x < 0)
        return (x - x) / (x - x);
    if (x == 0 || x > 1.7e308)
        return x;
    if (x < 0x1p-1022) /* subnormal: scale into the normal range first */
        return sqrt(x * 0x1p108) * 0x1p-54;
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    b = (b >> 1) + (0x3ffull << 51);
    double g;
    memcpy(&g, &b, sizeof g);
    for (int i = 0; i < 6; i++)
        g = 0.5 * (g + x / g);
    return g;
}

__attribute__((weak)) float sqrtf(float x) { return (float)sqrt((double)x); }
