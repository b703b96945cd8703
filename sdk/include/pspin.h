/*
 * pspin.h - core types, busy-waiting, LR/SC and AMO primitives.
 * Source-compatible with the PsPIN handler runtime header of the same name.
 */
#pragma once

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define MEM_ALIGNMENT 4
#define ALIGN_UP(NUM, ALIGN) ((((uint32_t)(NUM)) + ((ALIGN)-1)) & ~((ALIGN)-1))
#define DMA_MAX_XFER_SIZE 32768
#define DMA_NULL 0

typedef uint32_t dma_t;
typedef volatile uint32_t futex_t;

/* All atomics below carry a "memory" clobber so the compiler neither caches
 * shared values in registers nor moves plain accesses across them. */

/* Spin for roughly `cycles` cycles; each loop iteration (addi + taken branch)
 * is counted as 4 cycles, as on the PsPIN cores. */
static inline void rt_time_wait_cycles(const unsigned cycles)
{
    unsigned iters = cycles >> 2;
    if (iters == 0)
        return;
    __asm__ __volatile__("1: addi %0, %0, -1\n\t"
                         "bnez %0, 1b"
                         : "+r"(iters));
}

static inline uint32_t load_reserved(volatile const uint32_t *const addr)
{
    uint32_t v;
    __asm__ __volatile__("lr.w %0, (%1)" : "=r"(v) : "r"(addr) : "memory");
    return v;
}

/* 0: stored (reservation held), 1: reservation broken, nothing stored. */
static inline unsigned store_conditional(volatile uint32_t *const addr,
                                         const uint32_t val)
{
    unsigned fail;
    __asm__ __volatile__("sc.w %0, %1, (%2)"
                         : "=r"(fail)
                         : "r"(val), "r"(addr)
                         : "memory");
    return fail;
}

/* 0: swapped; -1: memory did not hold `old`; >0: the SC failed. */
static inline int compare_and_swap(volatile uint32_t *const addr,
                                   const uint32_t old, const uint32_t new)
{
    if (load_reserved(addr) != old)
        return -1;
    return (int)store_conditional(addr, new);
}

/* One AMO instruction, returning the previous memory value. */
#define SOFTSPIN_AMO(insn, type, addr, val)                                   \
    ({                                                                        \
        type __old;                                                           \
        __asm__ __volatile__(insn " %0, %1, (%2)"                             \
                             : "=r"(__old)                                    \
                             : "r"(val), "r"(addr)                            \
                             : "memory");                                     \
        __old;                                                                \
    })

static inline uint32_t amo_swap(volatile uint32_t *const addr, const uint32_t val)
{
    return SOFTSPIN_AMO("amoswap.w", uint32_t, addr, val);
}

static inline void amo_store(volatile uint32_t *const addr, const uint32_t val)
{
    __asm__ __volatile__("amoswap.w zero, %0, (%1)"
                         :
                         : "r"(val), "r"(addr)
                         : "memory");
}

static inline int32_t amo_add(volatile int32_t *const addr, const int32_t val)
{
    return SOFTSPIN_AMO("amoadd.w", int32_t, addr, val);
}

static inline uint32_t amo_and(volatile uint32_t *const addr, const uint32_t val)
{
    return SOFTSPIN_AMO("amoand.w", uint32_t, addr, val);
}

static inline uint32_t amo_or(volatile uint32_t *const addr, const uint32_t val)
{
    return SOFTSPIN_AMO("amoor.w", uint32_t, addr, val);
}

static inline uint32_t amo_xor(volatile uint32_t *const addr, const uint32_t val)
{
    return SOFTSPIN_AMO("amoxor.w", uint32_t, addr, val);
}

static inline uint32_t amo_maxu(volatile uint32_t *const addr, const uint32_t val)
{
    return SOFTSPIN_AMO("amomaxu.w", uint32_t, addr, val);
}

static inline int32_t amo_max(volatile int32_t *const addr, const int32_t val)
{
    return SOFTSPIN_AMO("amomax.w", int32_t, addr, val);
}

static inline uint32_t amo_minu(volatile uint32_t *const addr, const uint32_t val)
{
    return SOFTSPIN_AMO("amominu.w", uint32_t, addr, val);
}

static inline int32_t amo_min(volatile int32_t *const addr, const int32_t val)
{
    return SOFTSPIN_AMO("amomin.w", int32_t, addr, val);
}

/* Test-and-set locks: bit 0 set = held. */
static inline void futex_init(futex_t *futex)
{
    amo_store(futex, 0);
}

/* 1 if the lock was acquired, 0 if it was already held. */
static inline int futex_try_lock(futex_t *futex)
{
    return amo_or(futex, 1) == 0;
}

static inline int futex_lock(futex_t *futex)
{
    while (amo_or(futex, 1) != 0) {
    }
    return 1;
}

/* Back off between attempts so waiters do not saturate the memory port. */
static inline int futex_lock_s(futex_t *futex)
{
    while (amo_or(futex, 1) != 0)
        rt_time_wait_cycles(32);
    return 1;
}

static inline void futex_unlock(futex_t *futex)
{
    amo_store(futex, 0);
}
