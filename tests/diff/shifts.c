/* Shifts: register shift amounts are masked to 5 bits by the ISA (C leaves
 * amounts >= 32 undefined, so those go through rv_* wrappers that use the
 * instruction on RISC-V and the spec's masking natively), arithmetic right
 * shifts of negative values, immediate shifts, and the multi-instruction
 * 64-bit shift sequences the compiler emits on RV32. */
#include <stdint.h>
#include <stdio.h>

#ifdef __riscv
#define RV_SHIFT(name, insn)                                                  \
    static uint32_t name(uint32_t a, uint32_t b)                              \
    {                                                                         \
        uint32_t r;                                                           \
        __asm__ volatile(insn " %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));      \
        return r;                                                             \
    }
RV_SHIFT(rv_sll, "sll")
RV_SHIFT(rv_srl, "srl")
RV_SHIFT(rv_sra, "sra")
#else
static uint32_t rv_sll(uint32_t a, uint32_t b) { return a << (b & 31); }
static uint32_t rv_srl(uint32_t a, uint32_t b) { return a >> (b & 31); }
static uint32_t rv_sra(uint32_t a, uint32_t b)
{
    /* Arithmetic shift written without relying on signed >> behaviour. */
    uint32_t s = b & 31;
    uint32_t r = a >> s;
    if ((a & 0x80000000u) && s)
        r |= ~(0xffffffffu >> s);
    return r;
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
    0x00000000, 0x00000001, 0xffffffff, 0x80000000, 0x7fffffff,
    0x12345678, 0xdeadbeef, 0x80000001, 0xfffffffe, 0x0000ffff,
};
#define NVALS (sizeof(vals) / sizeof(vals[0]))

/* Amounts include >= 32 and "negative" ones to exercise the 5-bit mask. */
static const uint32_t amounts[] = {0, 1, 2, 7, 15, 16, 31, 32, 33, 63,
                                   64, 100, 0xffffffe1u, 0x80000004u};
#define NAMTS (sizeof(amounts) / sizeof(amounts[0]))

int main(void)
{
    for (unsigned i = 0; i < NVALS; i++) {
        for (unsigned j = 0; j < NAMTS; j++) {
            uint32_t a = vals[i], s = amounts[j];
            uint32_t l = rv_sll(a, s), r = rv_srl(a, s), ar = rv_sra(a, s);
            mix(l);
            mix(r);
            mix(ar);
            printf("%08x by %08x: sll %08x srl %08x sra %08x\n", a, s, l, r,
                   ar);
        }
    }

    /* C shifts with in-range amounts (signed >> is arithmetic with both
     * gcc and clang). */
    volatile int32_t neg = -123456789;
    volatile uint32_t pat = 0xc0ffee11u;
    for (int s = 0; s < 32; s++) {
        volatile int amt = s;
        int32_t a = neg >> amt;
        uint32_t b = pat >> amt, c = pat << amt;
        int32_t d = (int32_t)0x80000000u >> amt;
        mix((uint32_t)a);
        mix(b);
        mix(c);
        mix((uint32_t)d);
        printf("c %2d: %d %08x %08x %d\n", s, a, b, c, d);
    }
    /* Immediate forms (constant shift amounts). */
    int32_t n = neg;
    printf("imm: %d %d %d %08x %08x %08x\n", n >> 1, n >> 16, n >> 31,
           (uint32_t)n >> 1, (uint32_t)n >> 31, (uint32_t)n << 31);

    /* 64-bit shifts: RV32 needs multi-instruction sequences for these. */
    volatile uint64_t w = 0xfedcba9876543210ull;
    volatile int64_t sw = -0x123456789abcdefll;
    for (int s = 0; s < 64; s++) {
        volatile int amt = s;
        uint64_t l = w << amt, r = w >> amt;
        int64_t ar = sw >> amt;
        mix((uint32_t)l);
        mix((uint32_t)(l >> 32));
        mix((uint32_t)r);
        mix((uint32_t)(r >> 32));
        mix((uint32_t)ar);
        mix((uint32_t)((uint64_t)ar >> 32));
        if (s % 4 == 0 || s == 31 || s == 33 || s == 63)
            printf("64 %2d: %016llx %016llx %lld\n", s, (unsigned long long)l,
                   (unsigned long long)r, (long long)ar);
    }
    /* Rotates, as the compiler recognises them. */
    uint32_t x = 0x12345678u;
    for (int s = 1; s < 32; s += 5) {
        volatile int amt = s;
        uint32_t rl = (x << amt) | (x >> (32 - amt));
        uint32_t rr = (x >> amt) | (x << (32 - amt));
        mix(rl);
        mix(rr);
        printf("rot %2d: %08x %08x\n", s, rl, rr);
    }
    printf("hash=%08x\n", hash);
    return 0;
}
