/* M-extension corner cases: mul/mulh/mulhsu/mulhu/div/divu/rem/remu.
 * On RISC-V each operation is the single instruction (inline asm); natively
 * the ISA spec is emulated in portable C, so both builds print the results
 * the spec requires, including division by zero and INT32_MIN / -1. */
#include <stdint.h>
#include <stdio.h>

#ifdef __riscv
#define RV_OP(name, insn)                                                     \
    static uint32_t name(uint32_t a, uint32_t b)                              \
    {                                                                         \
        uint32_t r;                                                           \
        __asm__ volatile(insn " %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));      \
        return r;                                                             \
    }
RV_OP(rv_mul, "mul")
RV_OP(rv_mulh, "mulh")
RV_OP(rv_mulhsu, "mulhsu")
RV_OP(rv_mulhu, "mulhu")
RV_OP(rv_div, "div")
RV_OP(rv_divu, "divu")
RV_OP(rv_rem, "rem")
RV_OP(rv_remu, "remu")
#else
static uint32_t rv_mul(uint32_t a, uint32_t b) { return a * b; }
static uint32_t rv_mulh(uint32_t a, uint32_t b)
{
    return (uint32_t)((uint64_t)((int64_t)(int32_t)a * (int64_t)(int32_t)b) >> 32);
}
static uint32_t rv_mulhsu(uint32_t a, uint32_t b)
{
    /* signed x unsigned: the 64-bit product always fits in int64_t */
    return (uint32_t)((uint64_t)((int64_t)(int32_t)a * (int64_t)b) >> 32);
}
static uint32_t rv_mulhu(uint32_t a, uint32_t b)
{
    return (uint32_t)(((uint64_t)a * b) >> 32);
}
static uint32_t rv_div(uint32_t a, uint32_t b)
{
    if (b == 0)
        return 0xffffffffu;
    if (a == 0x80000000u && b == 0xffffffffu)
        return 0x80000000u;
    return (uint32_t)((int32_t)a / (int32_t)b);
}
static uint32_t rv_divu(uint32_t a, uint32_t b)
{
    return b == 0 ? 0xffffffffu : a / b;
}
static uint32_t rv_rem(uint32_t a, uint32_t b)
{
    if (b == 0)
        return a;
    if (a == 0x80000000u && b == 0xffffffffu)
        return 0;
    return (uint32_t)((int32_t)a % (int32_t)b);
}
static uint32_t rv_remu(uint32_t a, uint32_t b)
{
    return b == 0 ? a : a % b;
}
#endif

static uint32_t hash = 2166136261u;
static void mix(uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        hash ^= (v >> (8 * i)) & 0xff;
        hash *= 16777619u;
    }
}

static const uint32_t vals[] = {
    0x00000000, 0x00000001, 0xffffffff, 0x00000002, 0xfffffffe,
    0x80000000, 0x7fffffff, 0x80000001, 0x00000007, 0xfffffff9,
    0x00000003, 0x12345678, 0xdeadbeef, 0x0000ffff, 0x00010000,
    0xaaaaaaaa, 0x55555555, 0x0000000a, 0xfffffff6, 0x40000000,
};
#define NVALS (sizeof(vals) / sizeof(vals[0]))

int main(void)
{
    printf("muldiv: %u operands\n", (unsigned)NVALS);
    for (unsigned i = 0; i < NVALS; i++) {
        for (unsigned j = 0; j < NVALS; j++) {
            uint32_t a = vals[i], b = vals[j];
            uint32_t r[8] = {
                rv_mul(a, b), rv_mulh(a, b), rv_mulhsu(a, b), rv_mulhu(a, b),
                rv_div(a, b), rv_divu(a, b), rv_rem(a, b),    rv_remu(a, b),
            };
            for (int k = 0; k < 8; k++)
                mix(r[k]);
            printf("%08x %08x: %08x %08x %08x %08x | %08x %08x %08x %08x\n",
                   a, b, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
        }
    }

    /* Compiler-generated arithmetic through volatile operands (no UB cases:
     * nonzero divisors, no INT32_MIN / -1). */
    volatile int32_t sa = -1234567, sb = 89;
    volatile uint32_t ua = 4000000000u, ub = 3u;
    printf("c: %d %d %d %u %u %u\n", sa * sb, sa / sb, sa % sb, ua * ub,
           ua / ub, ua % ub);
    int32_t s = 1;
    uint32_t u = 1;
    for (int k = 1; k <= 40; k++) {
        volatile int32_t d = (k & 1) ? k : -k;
        s = (int32_t)((uint32_t)s * 31u + (uint32_t)k); /* wraps, no UB */
        int32_t q = s / d, m = s % d;
        u = u * 2654435761u + (uint32_t)k;
        volatile uint32_t du = (uint32_t)k * 977u;
        uint32_t uq = u / du, um = u % du;
        mix((uint32_t)q);
        mix((uint32_t)m);
        mix(uq);
        mix(um);
        if (k % 8 == 0)
            printf("loop %d: %d %d %d %u %u %u\n", k, s, q, m, u, uq, um);
    }
    printf("hash=%08x\n", hash);
    return 0;
}
