/*
 * softspin_ecall.h - raw `ecall` wrappers for the services in softspin_abi.h.
 *
 * Arguments are bound to a0..a5 and the service number to a7 with register
 * variables, so the compiler places them exactly where the HPU expects them.
 * a1 is always treated as written (services may return a 64-bit result in
 * a0/a1).  The "memory" clobber is required: services read guest buffers (write, DMA
 * source) and write guest memory (DMA destination) behind the compiler's back.
 */
#ifndef SOFTSPIN_ECALL_H
#define SOFTSPIN_ECALL_H

#include <stdint.h>
#include "softspin_abi.h"

#define SOFTSPIN_ECALL_CLOBBERS "memory"

static inline int32_t softspin_ecall0(uint32_t nr)
{
    register uint32_t a7 __asm__("a7") = nr;
    register int32_t a0 __asm__("a0");
    __asm__ __volatile__("ecall" : "=r"(a0) : "r"(a7)
                         : "a1", SOFTSPIN_ECALL_CLOBBERS);
    return a0;
}

static inline int32_t softspin_ecall1(uint32_t nr, uint32_t x0)
{
    register uint32_t a7 __asm__("a7") = nr;
    register uint32_t a0 __asm__("a0") = x0;
    __asm__ __volatile__("ecall" : "+r"(a0) : "r"(a7)
                         : "a1", SOFTSPIN_ECALL_CLOBBERS);
    return (int32_t)a0;
}

static inline int32_t softspin_ecall2(uint32_t nr, uint32_t x0, uint32_t x1)
{
    register uint32_t a7 __asm__("a7") = nr;
    register uint32_t a0 __asm__("a0") = x0;
    register uint32_t a1 __asm__("a1") = x1;
    __asm__ __volatile__("ecall" : "+r"(a0), "+r"(a1) : "r"(a7)
                         : SOFTSPIN_ECALL_CLOBBERS);
    return (int32_t)a0;
}

static inline int32_t softspin_ecall3(uint32_t nr, uint32_t x0, uint32_t x1,
                                      uint32_t x2)
{
    register uint32_t a7 __asm__("a7") = nr;
    register uint32_t a0 __asm__("a0") = x0;
    register uint32_t a1 __asm__("a1") = x1;
    register uint32_t a2 __asm__("a2") = x2;
    __asm__ __volatile__("ecall" : "+r"(a0), "+r"(a1) : "r"(a2), "r"(a7)
                         : SOFTSPIN_ECALL_CLOBBERS);
    return (int32_t)a0;
}

static inline int32_t softspin_ecall4(uint32_t nr, uint32_t x0, uint32_t x1,
                                      uint32_t x2, uint32_t x3)
{
    register uint32_t a7 __asm__("a7") = nr;
    register uint32_t a0 __asm__("a0") = x0;
    register uint32_t a1 __asm__("a1") = x1;
    register uint32_t a2 __asm__("a2") = x2;
    register uint32_t a3 __asm__("a3") = x3;
    __asm__ __volatile__("ecall" : "+r"(a0), "+r"(a1)
                         : "r"(a2), "r"(a3), "r"(a7)
                         : SOFTSPIN_ECALL_CLOBBERS);
    return (int32_t)a0;
}

static inline int32_t softspin_ecall5(uint32_t nr, uint32_t x0, uint32_t x1,
                                      uint32_t x2, uint32_t x3, uint32_t x4)
{
    register uint32_t a7 __asm__("a7") = nr;
    register uint32_t a0 __asm__("a0") = x0;
    register uint32_t a1 __asm__("a1") = x1;
    register uint32_t a2 __asm__("a2") = x2;
    register uint32_t a3 __asm__("a3") = x3;
    register uint32_t a4 __asm__("a4") = x4;
    __asm__ __volatile__("ecall" : "+r"(a0), "+r"(a1)
                         : "r"(a2), "r"(a3), "r"(a4), "r"(a7)
                         : SOFTSPIN_ECALL_CLOBBERS);
    return (int32_t)a0;
}

static inline int32_t softspin_ecall6(uint32_t nr, uint32_t x0, uint32_t x1,
                                      uint32_t x2, uint32_t x3, uint32_t x4,
                                      uint32_t x5)
{
    register uint32_t a7 __asm__("a7") = nr;
    register uint32_t a0 __asm__("a0") = x0;
    register uint32_t a1 __asm__("a1") = x1;
    register uint32_t a2 __asm__("a2") = x2;
    register uint32_t a3 __asm__("a3") = x3;
    register uint32_t a4 __asm__("a4") = x4;
    register uint32_t a5 __asm__("a5") = x5;
    __asm__ __volatile__("ecall" : "+r"(a0), "+r"(a1)
                         : "r"(a2), "r"(a3), "r"(a4), "r"(a5), "r"(a7)
                         : SOFTSPIN_ECALL_CLOBBERS);
    return (int32_t)a0;
}

/* Ends the run (handler or bare-metal program) with `reason` (a
 * NUL-terminated text the NIC reports with a non-zero status, or NULL);
 * never returns. */
static inline __attribute__((noreturn)) void softspin_exit_reason(int status, const char *reason)
{
    softspin_ecall2(SOFTSPIN_SYS_EXIT, (uint32_t)status, (uint32_t)reason);
    __builtin_unreachable();
}

/* Ends the run (handler or bare-metal program); never returns. */
static inline __attribute__((noreturn)) void softspin_exit(int status)
{
    softspin_exit_reason(status, 0);
}

#endif
