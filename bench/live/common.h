/* Shared helpers of the live-NIC benchmark programs (bench/live_bench.py). */
#ifndef LIVE_COMMON_H
#define LIVE_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void die(const char *what)
{
    perror(what);
    exit(1);
}

/* A positive decimal argument, or exit naming the argument and its limit. */
static inline long arg_long(const char *name, const char *s, long lo, long hi)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == 0 || *end != 0 || v < lo || v > hi) {
        fprintf(stderr, "bad %s '%s': must be an integer in [%ld, %ld]\n", name, s, lo, hi);
        exit(2);
    }
    return v;
}
#endif
