/* 64-bit arithmetic on a 32-bit core: add/sub carries, multiplication
 * (mul/mulhu sequences), signed and unsigned division and remainder (the
 * runtime's __udivdi3/__umoddi3/__divdi3/__moddi3), shifts, comparisons and
 * printing with %lld/%llu/%llx.  Operands span all magnitudes so every
 * division path is used; no undefined cases (x/0, INT64_MIN/-1). */
#include <stdint.h>
#include <stdio.h>

/* The compiler picks which helper it calls (it may derive a remainder from
 * the quotient), so each runtime helper is also called by name on RV32. */
#ifdef __riscv
uint64_t __udivdi3(uint64_t, uint64_t);
uint64_t __umoddi3(uint64_t, uint64_t);
int64_t __divdi3(int64_t, int64_t);
int64_t __moddi3(int64_t, int64_t);
#define UDIV(a, b) __udivdi3(a, b)
#define UMOD(a, b) __umoddi3(a, b)
#define SDIV(a, b) __divdi3(a, b)
#define SMOD(a, b) __moddi3(a, b)
#else
#define UDIV(a, b) ((a) / (b))
#define UMOD(a, b) ((a) % (b))
#define SDIV(a, b) ((a) / (b))
#define SMOD(a, b) ((a) % (b))
#endif

static uint32_t lcg_state = 2024;
static uint32_t lcg(void)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lcg_state;
}

static uint64_t rand64(void)
{
    uint64_t v = (uint64_t)lcg() << 32 | lcg();
    return v >> (lcg() % 64); /* vary the magnitude */
}

static uint64_t acc = 1469598103934665603ull;
static void mix(uint64_t v)
{
    acc ^= v;
    acc *= 1099511628211ull;
}

int main(void)
{
    static const uint64_t edge[] = {
        0, 1, 2, 3, 10, 0xffffffffull, 0x100000000ull, 0x100000001ull,
        0x7fffffffffffffffull, 0x8000000000000000ull, 0xffffffffffffffffull,
        0x123456789abcdef0ull, 1000000007ull, 0xffffull, 0x10000ull,
        0xfffffffffffull,
    };
    const unsigned ne = sizeof edge / sizeof edge[0];

    for (unsigned i = 0; i < ne; i++) {
        for (unsigned j = 0; j < ne; j++) {
            volatile uint64_t a = edge[i], b = edge[j];
            uint64_t s = a + b, d = a - b, m = a * b;
            mix(s);
            mix(d);
            mix(m);
            mix((a < b) | (a == b) << 1 | ((int64_t)a < (int64_t)b) << 2);
            if (b != 0) {
                uint64_t q = a / b, r = a % b;
                mix(q);
                mix(r);
                if (q * b + r != a)
                    printf("BAD udiv %llx %llx\n", (unsigned long long)a,
                           (unsigned long long)b);
                int64_t sa = (int64_t)a, sb = (int64_t)b;
                if (!(sa == INT64_MIN && sb == -1)) {
                    int64_t sq = sa / sb, sr = sa % sb;
                    mix((uint64_t)sq);
                    mix((uint64_t)sr);
                    if (i % 3 == 0 && j % 3 == 0)
                        printf("%llx / %llx: u %llu r %llu | s %lld r %lld\n",
                               (unsigned long long)a, (unsigned long long)b,
                               (unsigned long long)q, (unsigned long long)r,
                               (long long)sq, (long long)sr);
                }
            }
        }
    }

    /* Random operands of all sizes. */
    unsigned bad = 0;
    for (int k = 0; k < 2000; k++) {
        volatile uint64_t a = rand64(), b = rand64();
        if (b == 0)
            b = 7;
        uint64_t q = a / b, r = a % b;
        bad += (q * b + r != a) || r >= b;
        int64_t sa = (int64_t)(a ^ ((uint64_t)(k & 1) << 63));
        int64_t sb = (int64_t)((k & 2) ? 0 - b : b); /* wraps, no UB */
        if (sa == INT64_MIN && sb == -1)
            sb = 3;
        int64_t sq = sa / sb, sr = sa % sb;
        bad += sq * sb + sr != sa;
        mix(q);
        mix(r);
        mix((uint64_t)sq);
        mix((uint64_t)sr);
        mix(a * b);
        mix((uint64_t)((int64_t)(int32_t)a * (int64_t)(int32_t)b));
        mix(a >> (k & 63));
        mix(b << (k & 63));
        mix((uint64_t)(sa >> (k & 63)));
        mix(UDIV(a, b) ^ UMOD(a, b) ^ (uint64_t)SDIV(sa, sb) ^ (uint64_t)SMOD(sa, sb));
        bad += UDIV(a, b) != q || UMOD(a, b) != r || SDIV(sa, sb) != sq ||
               SMOD(sa, sb) != sr;
        if (k % 250 == 0)
            printf("r%4d: %llu / %llu = %llu r %llu; %lld / %lld = %lld r %lld\n",
                   k, (unsigned long long)a, (unsigned long long)b,
                   (unsigned long long)q, (unsigned long long)r, (long long)sa,
                   (long long)sb, (long long)sq, (long long)sr);
    }

    /* Division by constants (the compiler may use multiply-high tricks or
     * call the helpers). */
    volatile uint64_t big = 0xfedcba9876543210ull;
    int64_t sbig = -(int64_t)0x0123456789abcdefll;
    printf("const: %llu %llu %llu %lld %lld %lld\n",
           (unsigned long long)(big / 10), (unsigned long long)(big % 1000),
           (unsigned long long)(big / 0xffffffffull), (long long)(sbig / 7),
           (long long)(sbig % 7), (long long)(sbig / -100000));
    /* Extremes through printf. */
    printf("extremes: %lld %lld %llu %llx %llX %llo\n", (long long)INT64_MIN,
           (long long)INT64_MAX, (unsigned long long)UINT64_MAX,
           (unsigned long long)UINT64_MAX, 0xabcdefull, 0777ull);
    /* Factorials and Fibonacci up to the 64-bit limit. */
    uint64_t f = 1, fa = 0, fb = 1;
    for (unsigned n = 1; n <= 20; n++) {
        f *= n;
        mix(f);
    }
    for (unsigned n = 0; n < 93; n++) {
        uint64_t t = fa + fb;
        fa = fb;
        fb = t;
    }
    printf("20! = %llu fib(93) = %llu\n", (unsigned long long)f,
           (unsigned long long)fa);
    printf("bad=%u acc=%016llx\n", bad, (unsigned long long)acc);
    return 0;
}
