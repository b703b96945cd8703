/*
 * util.h - small helper macros, source-compatible with the PsPIN runtime.
 */
#pragma once

#include <stdio.h>
#include "softspin_ecall.h"

#define MIN(a, b) (((a) < (b)) ? (a) : (b))
#define MAX(a, b) (((a) > (b)) ? (a) : (b))

#define STRINGIFY(x) #x

/* These expand to a full statement (trailing ';' included), as in PsPIN. */
#define read_csr(reg, val) \
    __asm__ __volatile__("csrr %0, " STRINGIFY(reg) : "=r"(val));
#define write_csr(reg, val) \
    __asm__ __volatile__("csrw " STRINGIFY(reg) ", %0" : : "rK"(val) : "memory");
#define clear_csr(reg, mask) \
    __asm__ __volatile__("csrc " STRINGIFY(reg) ", %0" : : "rK"(mask) : "memory");
#define read_register(reg, val) \
    __asm__ __volatile__("mv %0, " STRINGIFY(reg) : "=r"(val));
#define write_register(reg, val) \
    __asm__ __volatile__("mv " STRINGIFY(reg) ", %0" : : "r"(val) : "memory");

#define DIV_CEIL(a, b) (((a) + (b) - 1) / (b))

/* Power-of-two divisors only. */
#define FAST_DIV(a, log2_b) ((a) >> (log2_b))
#define FAST_MOD(a, b) ((a) & ((b) - 1))

#define AND(a, b) ((a) & (b))

/* Ends the current handler run (status 1), like PsPIN's TERMINATE store. */
#define TERMINATE { softspin_exit(1); }

/* Places a global assembler label at this point (for tracing/profiling). */
#define LABEL(name) __asm__ __volatile__(#name ":;" ::: "memory")

#ifdef CHECK_ASSERTS
#define ASSERT(condition)                                                     \
    if (!(condition)) {                                                       \
        printf("Assertion fail: " #condition " at " __FILE__ ":%d\n",         \
               __LINE__);                                                     \
        softspin_exit(1);                                                     \
    }
#else
#define ASSERT(condition)
#endif

#define SPIN_PRINTF(format, ...) \
    printf("%s:%s:%d: " format, __FILE__, __FUNCTION__, __LINE__, ##__VA_ARGS__)

#ifdef LOG
#define DEBUG_PRINT(format, ...) SPIN_PRINTF(format, ##__VA_ARGS__)
#else
#define DEBUG_PRINT(...)
#endif

#ifdef ENABLE_TRACING
#define TRACING_DUMMY_INSTR() __asm__ __volatile__("nop")
#else
#define TRACING_DUMMY_INSTR()
#endif
