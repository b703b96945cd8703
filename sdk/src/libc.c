/*
 * libc.c - freestanding C library pieces for softspin guests: memory and
 * string routines, exit/abort/assert, and the 64-bit helpers that clang
 * emits for RV32 (there is no compiler-rt for riscv32 here): division at
 * every -O level, and shifts at -Oz.
 *
 * Built with -ffreestanding, which also stops clang from turning the copy
 * loops below back into calls to memcpy/memset.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "softspin_ecall.h"

/* The NIC profile the image was built for, when built for exactly one
 * (`softspin build --profile NAME` passes -DSOFTSPIN_PROFILE_NAME=NAME,
 * NicConfig::sdk_defines): `softspin sim` runs the image with that profile
 * and its frame kind unless told otherwise. In the runtime, so every image
 * has it whichever headers its sources include. */
#ifdef SOFTSPIN_PROFILE_NAME
#define SS_STR_(x) #x
#define SS_STR(x) SS_STR_(x)
__attribute__((used)) const char __softspin_profile[] = SS_STR(SOFTSPIN_PROFILE_NAME);
#endif

/* Word accesses through a may_alias type so they can view any object. */
typedef uint32_t __attribute__((__may_alias__)) word_t;

#define WORD_MASK ((uintptr_t)(sizeof(word_t) - 1))

void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;

    /* Word copies only pay off when both pointers can become aligned. */
    if (n >= 8 && (((uintptr_t)d ^ (uintptr_t)s) & WORD_MASK) == 0) {
        while ((uintptr_t)d & WORD_MASK) {
            *d++ = *s++;
            n--;
        }
        word_t *dw = (word_t *)d;
        const word_t *sw = (const word_t *)s;
        for (; n >= 16; n -= 16, dw += 4, sw += 4) {
            word_t a = sw[0], b = sw[1], c = sw[2], e = sw[3];
            dw[0] = a;
            dw[1] = b;
            dw[2] = c;
            dw[3] = e;
        }
        for (; n >= 4; n -= 4)
            *dw++ = *sw++;
        d = (uint8_t *)dw;
        s = (const uint8_t *)sw;
    }
    while (n--)
        *d++ = *s++;
    return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;

    if (d == s || n == 0)
        return dst;
    /* A forward copy is safe whenever dst is below src (each word is read
     * before anything at or after it is written), and when they do not
     * overlap at all. */
    if (d < s || d >= s + n) {
        if (((uintptr_t)d ^ (uintptr_t)s) & WORD_MASK) {
            while (n--)
                *d++ = *s++;
            return dst;
        }
        while (n && ((uintptr_t)d & WORD_MASK)) {
            *d++ = *s++;
            n--;
        }
        for (; n >= 4; n -= 4, d += 4, s += 4)
            *(word_t *)d = *(const word_t *)s;
        while (n--)
            *d++ = *s++;
        return dst;
    }
    /* dst overlaps the tail of src: copy backwards. */
    d += n;
    s += n;
    if ((((uintptr_t)d ^ (uintptr_t)s) & WORD_MASK) == 0) {
        while (n && ((uintptr_t)d & WORD_MASK)) {
            *--d = *--s;
            n--;
        }
        for (; n >= 4; n -= 4) {
            d -= 4;
            s -= 4;
            *(word_t *)d = *(const word_t *)s;
        }
    }
    while (n--)
        *--d = *--s;
    return dst;
}

void *memset(void *dst, int c, size_t n)
{
    uint8_t *d = (uint8_t *)dst;
    uint8_t b = (uint8_t)c;

    if (n >= 8) {
        while ((uintptr_t)d & WORD_MASK) {
            *d++ = b;
            n--;
        }
        word_t w = b * 0x01010101u;
        word_t *dw = (word_t *)d;
        for (; n >= 16; n -= 16, dw += 4) {
            dw[0] = w;
            dw[1] = w;
            dw[2] = w;
            dw[3] = w;
        }
        for (; n >= 4; n -= 4)
            *dw++ = w;
        d = (uint8_t *)dw;
    }
    while (n--)
        *d++ = b;
    return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const uint8_t *x = (const uint8_t *)a;
    const uint8_t *y = (const uint8_t *)b;
    for (; n; n--, x++, y++) {
        if (*x != *y)
            return *x < *y ? -1 : 1;
    }
    return 0;
}

/* clang may lower memcmp(...) == 0 to bcmp when builtins are enabled. */
int bcmp(const void *a, const void *b, size_t n)
{
    return memcmp(a, b, n);
}

void *memchr(const void *s, int c, size_t n)
{
    const uint8_t *p = (const uint8_t *)s;
    for (; n; n--, p++) {
        if (*p == (uint8_t)c)
            return (void *)p;
    }
    return NULL;
}

size_t strlen(const char *s)
{
    const char *p = s;
    while (*p)
        p++;
    return (size_t)(p - s);
}

size_t strnlen(const char *s, size_t max)
{
    size_t n = 0;
    while (n < max && s[n])
        n++;
    return n;
}

int strcmp(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return (int)(unsigned char)*a - (int)(unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
    for (; n; n--, a++, b++) {
        if (*a != *b || !*a)
            return (int)(unsigned char)*a - (int)(unsigned char)*b;
    }
    return 0;
}

char *strcpy(char *restrict dst, const char *restrict src)
{
    char *d = dst;
    while ((*d++ = *src++) != 0) {
    }
    return dst;
}

char *strncpy(char *restrict dst, const char *restrict src, size_t n)
{
    size_t i = 0;
    for (; i < n && src[i]; i++)
        dst[i] = src[i];
    for (; i < n; i++)
        dst[i] = 0;
    return dst;
}

char *strchr(const char *s, int c)
{
    for (;; s++) {
        if (*s == (char)c)
            return (char *)s;
        if (!*s)
            return NULL;
    }
}

/* ---- process control ---- */

void exit(int status)
{
    softspin_exit(status);
}

void abort(void)
{
    softspin_exit_reason(134, "abort()");
}

/* The message goes to the output and, through the exit ecall, into the
 * NIC's error report (the output ring may have dropped it). */
void __softspin_assert_fail(const char *expr, const char *file, int line,
                            const char *func)
{
    char msg[160];
    snprintf(msg, sizeof msg, "%s:%d: %s: Assertion `%s' failed.", file, line, func, expr);
    printf("%s\n", msg);
    softspin_exit_reason(134, msg);
}

/* ---- 64-bit division helpers (libgcc/compiler-rt ABI names) ----
 * Only 32-bit divides and shifts are used here, so these never recurse.
 * Division by zero (undefined in C) follows the RISC-V div/rem rules:
 * quotient all ones, remainder = dividend. */

uint64_t __udivmoddi4(uint64_t n, uint64_t d, uint64_t *rem)
{
    uint64_t q = 0;

    if (d == 0) {
        if (rem)
            *rem = n;
        return ~(uint64_t)0;
    }
    if ((n >> 32) == 0 && (d >> 32) == 0) {
        uint32_t n32 = (uint32_t)n, d32 = (uint32_t)d;
        if (rem)
            *rem = n32 % d32;
        return n32 / d32;
    }
    if (d > n) {
        if (rem)
            *rem = n;
        return 0;
    }
    if ((d >> 32) == 0 && (uint32_t)d <= 0xffffu) {
        /* Small divisor: long division in 16-bit digits, each step a single
         * 32-bit divide (the partial remainder stays below 2^16). */
        uint32_t d32 = (uint32_t)d, r = 0;
        for (int shift = 48; shift >= 0; shift -= 16) {
            uint32_t cur = (r << 16) | (uint32_t)((n >> shift) & 0xffffu);
            q |= (uint64_t)(cur / d32) << shift;
            r = cur % d32;
        }
        if (rem)
            *rem = r;
        return q;
    }
    /* General case: restoring shift-and-subtract, starting from the
     * quotient's top bit. */
    int shift = __builtin_clzll(d) - __builtin_clzll(n);
    d <<= shift;
    for (int i = 0; i <= shift; i++) {
        q <<= 1;
        if (n >= d) {
            n -= d;
            q |= 1;
        }
        d >>= 1;
    }
    if (rem)
        *rem = n;
    return q;
}

uint64_t __udivdi3(uint64_t n, uint64_t d)
{
    return __udivmoddi4(n, d, NULL);
}

uint64_t __umoddi3(uint64_t n, uint64_t d)
{
    uint64_t r;
    __udivmoddi4(n, d, &r);
    return r;
}

/* Negation is done in unsigned arithmetic so INT64_MIN does not overflow. */
int64_t __divdi3(int64_t a, int64_t b)
{
    uint64_t ua = a < 0 ? -(uint64_t)a : (uint64_t)a;
    uint64_t ub = b < 0 ? -(uint64_t)b : (uint64_t)b;
    uint64_t q = __udivmoddi4(ua, ub, NULL);
    if (b == 0)
        return -1;
    return (int64_t)(((a < 0) != (b < 0)) ? -q : q);
}

int64_t __moddi3(int64_t a, int64_t b)
{
    uint64_t ua = a < 0 ? -(uint64_t)a : (uint64_t)a;
    uint64_t ub = b < 0 ? -(uint64_t)b : (uint64_t)b;
    uint64_t r;
    __udivmoddi4(ua, ub, &r);
    return (int64_t)(a < 0 ? -r : r);
}

int64_t __divmoddi4(int64_t a, int64_t b, int64_t *rem)
{
    int64_t q = __divdi3(a, b);
    if (rem)
        *rem = (int64_t)((uint64_t)a - (uint64_t)q * (uint64_t)b);
    return q;
}

/* ---- 64-bit shift helpers (only -Oz calls these) ----
 * Written on 32-bit halves: a 64-bit shift here would, at -Oz, become a
 * call to the helper itself. */

typedef union {
    uint64_t u;
    struct {
        uint32_t lo, hi;    /* little-endian */
    } w;
} dw_t;

uint64_t __ashldi3(uint64_t a, int b)
{
    dw_t in = {a}, out;
    b &= 63;
    if (b == 0)
        return a;
    if (b >= 32) {
        out.w.lo = 0;
        out.w.hi = in.w.lo << (b - 32);
    } else {
        out.w.lo = in.w.lo << b;
        out.w.hi = (in.w.hi << b) | (in.w.lo >> (32 - b));
    }
    return out.u;
}

uint64_t __lshrdi3(uint64_t a, int b)
{
    dw_t in = {a}, out;
    b &= 63;
    if (b == 0)
        return a;
    if (b >= 32) {
        out.w.hi = 0;
        out.w.lo = in.w.hi >> (b - 32);
    } else {
        out.w.hi = in.w.hi >> b;
        out.w.lo = (in.w.lo >> b) | (in.w.hi << (32 - b));
    }
    return out.u;
}

int64_t __ashrdi3(int64_t a, int b)
{
    dw_t in = {(uint64_t)a}, out;
    b &= 63;
    if (b == 0)
        return a;
    if (b >= 32) {
        out.w.hi = (uint32_t)((int32_t)in.w.hi >> 31);
        out.w.lo = (uint32_t)((int32_t)in.w.hi >> (b - 32));
    } else {
        out.w.hi = (uint32_t)((int32_t)in.w.hi >> b);
        out.w.lo = (in.w.lo >> b) | (in.w.hi << (32 - b));
    }
    return (int64_t)out.u;
}
