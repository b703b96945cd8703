/*
 * pspin.h (FPsPIN profile) - the SDK's pspin.h plus FPsPIN's host data
 * block: per-HPU response flags written by the host and the performance
 * counters it reads (`__host_data`, defined by the profile's runtime,
 * sdk/fpspin/runtime/src/fpspin_rt.c), and cycles()/push_counter().
 */
#ifndef SOFTSPIN_FPSPIN_PSPIN_H
#define SOFTSPIN_FPSPIN_PSPIN_H

/* The SDK's own pspin.h, by path: include_next would find this file again
 * when it was reached relative to handler.h. */
#include "../../../include/pspin.h"
#include "spin_conf.h"
#include "pspin_rt.h"

#define MAX_COUNTERS 16

struct perf_counter {
    uint32_t sum;
    uint32_t count;
};

/* The host finds this block by its symbol in the image (libfpspin). */
struct host_data {
    uint64_t flag[CORE_COUNT];
    struct perf_counter counters[MAX_COUNTERS];
};
extern volatile struct host_data __host_data;

static inline uint32_t cycles(void) { return softspin_fpspin_cycles(); }

/* One sample; several HPUs may update the same counter. */
static inline void push_counter(volatile struct perf_counter *c, uint32_t dur)
{
    amo_add((volatile int32_t *)&c->count, 1);
    amo_add((volatile int32_t *)&c->sum, (int32_t)dur);
}

#endif
