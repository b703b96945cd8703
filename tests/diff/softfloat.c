/* IEEE-754 float and double arithmetic, comparisons and conversions. On
 * RV32 (no FPU) every operation here is a call into the SDK's soft-float
 * (sdk/src/softfloat.c); natively it is the hardware. Operands: edge cases
 * (zeros, subnormals, the normal range's ends, infinities, NaNs, ties) in
 * all pairs, then random bit patterns in several classes. Results are
 * printed as bit patterns; NaNs as one pattern, since their sign and payload
 * are platform-defined. Conversions to integers stay in range (C leaves the
 * rest undefined). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint64_t bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    if ((u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull)
        return 0x7ff8000000000000ull; /* any NaN */
    return u;
}
static double dbl(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}
static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0x7fc00000u;
    return u;
}
static float flt(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t state = 0x243f6a8885a308d3ull;
static uint64_t rnd(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static uint64_t hash;
static void mix(uint64_t v)
{
    hash ^= v;
    hash *= 1099511628211ull;
}

static const uint64_t edge[] = {
    0x0000000000000000ull, 0x8000000000000000ull, /* +-0 */
    0x3ff0000000000000ull, 0xbff0000000000000ull, /* +-1 */
    0x3ff0000000000001ull, 0x3fefffffffffffffull, /* 1 + ulp, 1 - ulp/2 */
    0x4000000000000000ull, 0x4008000000000000ull, /* 2, 3 */
    0x3fe0000000000000ull, 0x400921fb54442d18ull, /* 0.5, pi */
    0x4340000000000000ull, 0x4340000000000001ull, /* 2^53, 2^53 + 2 */
    0x3ca0000000000000ull, 0x3cb0000000000000ull, /* 2^-53, 2^-52 */
    0x0000000000000001ull, 0x8000000000000003ull, /* subnormals */
    0x000fffffffffffffull, 0x0008000000000000ull,
    0x0010000000000000ull, 0x0010000000000001ull, /* smallest normals */
    0x7fefffffffffffffull, 0xffefffffffffffffull, /* +-max */
    0x7fe0000000000000ull, 0x1ff0000000000000ull, /* 2^1023, 2^-512 */
    0x7ff0000000000000ull, 0xfff0000000000000ull, /* +-inf */
    0x7ff8000000000000ull, 0x7ff0000000000001ull, /* qNaN, sNaN */
    0x41dfffffffc00000ull, 0xc1e0000000000000ull, /* INT32_MAX, INT32_MIN */
};
#define NE (sizeof edge / sizeof edge[0])

static volatile double va, vb;
static volatile float fa, fb;

/* Every double operation on (a, b), printed when `show`. */
static void dops(uint64_t a, uint64_t b, int show)
{
    va = dbl(a);
    vb = dbl(b);
    uint64_t s = bits(va + vb), d = bits(va - vb), m = bits(va * vb), q = bits(va / vb);
    unsigned c = (va < vb) | (va <= vb) << 1 | (va == vb) << 2 | (va != vb) << 3 | (va > vb) << 4 | (va >= vb) << 5 |
               __builtin_isunordered(va, vb) << 6;
    mix(s), mix(d), mix(m), mix(q), mix(c);
    if (show)
        printf("%016llx %016llx: %016llx %016llx %016llx %016llx %02x\n", (unsigned long long)a,
               (unsigned long long)b, (unsigned long long)s, (unsigned long long)d, (unsigned long long)m,
               (unsigned long long)q, c);
}

static void fops(uint32_t a, uint32_t b, int show)
{
    fa = flt(a);
    fb = flt(b);
    uint32_t s = fbits(fa + fb), d = fbits(fa - fb), m = fbits(fa * fb), q = fbits(fa / fb);
    unsigned c = (fa < fb) | (fa <= fb) << 1 | (fa == fb) << 2 | (fa != fb) << 3 | (fa > fb) << 4 | (fa >= fb) << 5 |
               __builtin_isunordered(fa, fb) << 6;
    mix(s), mix(d), mix(m), mix(q), mix(c);
    if (show)
        printf("%08x %08x: %08x %08x %08x %08x %02x\n", (unsigned)a, (unsigned)b, (unsigned)s, (unsigned)d,
               (unsigned)m, (unsigned)q, c);
}

/* Random doubles from one class. */
static uint64_t gen(int cls)
{
    uint64_t r = rnd(), s = r & 0x8000000000000000ull, f = r & 0x000fffffffffffffull;
    switch (cls) {
    case 0: return r;                                                /* any bits */
    case 1: return s | f;                                            /* subnormal */
    case 2: return s | (uint64_t)(1020 + rnd() % 8) << 52 | f;       /* near 1 */
    case 3: return s | (uint64_t)(rnd() % 60) << 52 | f;             /* near underflow */
    case 4: return s | (uint64_t)(1990 + rnd() % 57) << 52 | f;      /* near overflow */
    default: return s | (uint64_t)(1023 + rnd() % 4) << 52 | (f & ~0xffffffffull); /* short: ties */
    }
}

int main(void)
{
    printf("double edge pairs\n");
    for (unsigned i = 0; i < NE; i++)
        for (unsigned j = 0; j < NE; j++)
            dops(edge[i], edge[j], 1);

    printf("float edge pairs\n");
    for (unsigned i = 0; i < NE; i += 2)
        for (unsigned j = 0; j < NE; j += 3) {
            fa = (float)dbl(edge[i]); /* the double edges rounded to float */
            fb = (float)dbl(edge[j]);
            fops(fbits(fa), fbits(fb), 1);
        }
    fops(0x00000001u, 0x3f000000u, 1); /* float subnormal halved: a tie */
    fops(0x00800000u, 0x3f7fffffu, 1);
    fops(0x7f7fffffu, 0x7f7fffffu, 1);

    for (int cls = 0; cls < 6; cls++) {
        hash = 14695981039346656037ull;
        for (int k = 0; k < 3000; k++) {
            uint64_t a = gen(cls), b = gen(cls);
            if (k & 1) /* a close neighbour: cancellation and ties */
                b = (a ^ (rnd() & 0x3ff)) ^ (rnd() & 1ull) << 63;
            dops(a, b, k % 500 == 0);
        }
        printf("double class %d: %016llx\n", cls, (unsigned long long)hash);
    }
    for (int cls = 0; cls < 3; cls++) {
        hash = 14695981039346656037ull;
        for (int k = 0; k < 3000; k++) {
            uint32_t a = (uint32_t)rnd(), b = (uint32_t)rnd();
            if (cls == 1)
                a &= 0x807fffffu, b &= 0x80ffffffu; /* subnormals and tiny */
            if (cls == 2 || (k & 1))
                b = a ^ ((uint32_t)rnd() & 0xff);
            fops(a, b, k % 500 == 0);
        }
        printf("float class %d: %016llx\n", cls, (unsigned long long)hash);
    }

    /* float <-> double */
    hash = 14695981039346656037ull;
    for (unsigned i = 0; i < NE; i++) {
        va = dbl(edge[i]);
        fa = (float)va;
        vb = (double)fa;
        printf("cvt %016llx: %08x %016llx\n", (unsigned long long)edge[i], (unsigned)fbits(fa),
               (unsigned long long)bits(vb));
    }
    for (int k = 0; k < 6000; k++) {
        va = dbl(gen(k % 6));
        fa = (float)va;
        mix(fbits(fa));
        fb = flt((uint32_t)rnd());
        vb = fb;
        mix(bits(vb));
        if (k % 1000 == 0)
            printf("cvt %016llx -> %08x, %08x -> %016llx\n", (unsigned long long)bits(va), (unsigned)fbits(fa),
                   (unsigned)fbits(fb), (unsigned long long)bits(vb));
    }
    /* the narrowest doubles above/below float ties around 1 and subnormals */
    static const uint64_t narrow[] = {0x3ff0000010000000ull, 0x3ff0000030000000ull, 0x3ff000001fffffffull,
                                      0x36a0000000000000ull, 0x3690000000000000ull, 0x3690000000000001ull,
                                      0x47efffffefffffffull, 0x47effffff0000000ull};
    for (unsigned i = 0; i < sizeof narrow / sizeof narrow[0]; i++) {
        va = dbl(narrow[i]);
        fa = (float)va;
        printf("narrow %016llx -> %08x\n", (unsigned long long)narrow[i], (unsigned)fbits(fa));
    }
    printf("float<->double: %016llx\n", (unsigned long long)hash);

    /* integers <-> floating point */
    static const int64_t ints[] = {0, 1, -1, 2, 3, 7, -8, 1000000, 0x7fffffff, -0x7fffffff - 1,
                                   0x1fffffffffffff, 0x20000000000001, 0x7fffffffffffffff,
                                   -0x7fffffffffffffff - 1, 0x123456789abcdefll, 0x00ffffff, 0x01000001};
    static volatile int64_t vi;
    static volatile int32_t vi32;
    for (unsigned i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        vi = ints[i];
        vi32 = (int32_t)ints[i];
        printf("int %lld: %016llx %016llx %016llx %016llx %08x %08x %08x %08x\n", (long long)vi,
               (unsigned long long)bits((double)vi), (unsigned long long)bits((double)(uint64_t)vi),
               (unsigned long long)bits((double)vi32), (unsigned long long)bits((double)(uint32_t)vi32),
               (unsigned)fbits((float)vi), (unsigned)fbits((float)(uint64_t)vi), (unsigned)fbits((float)vi32),
               (unsigned)fbits((float)(uint32_t)vi32));
    }
    hash = 14695981039346656037ull;
    for (int k = 0; k < 4000; k++) {
        vi = (int64_t)rnd() >> (rnd() % 64);
        vi32 = (int32_t)vi;
        mix(bits((double)vi)), mix(bits((double)(uint64_t)vi)), mix(bits((double)vi32));
        mix(bits((double)(uint32_t)vi32)), mix(fbits((float)vi)), mix(fbits((float)(uint64_t)vi));
        mix(fbits((float)vi32)), mix(fbits((float)(uint32_t)vi32));
        /* and back, truncating toward zero, in range */
        uint64_t r = rnd();
        va = dbl((r & 0x800fffffffffffffull) | (uint64_t)(1000 + r % 62) << 52); /* |x| < 2^62 */
        mix((uint64_t)(int64_t)va);
        if (va > -1.0)
            mix((uint64_t)va);
        vb = dbl((r & 0x800fffffffffffffull) | (uint64_t)(1000 + r % 30) << 52); /* |x| < 2^30 */
        mix((uint64_t)(int32_t)vb);
        if (vb > -1.0)
            mix((uint32_t)vb);
        fa = (float)vb;
        mix((uint64_t)(int32_t)fa);
        mix((uint64_t)(int64_t)fa);
        if (fa > -1.0f)
            mix((uint64_t)(uint32_t)fa), mix((uint64_t)fa);
        if (k % 800 == 0)
            printf("int %lld -> %016llx; %016llx -> %lld; %08x -> %d\n", (long long)vi,
                   (unsigned long long)bits((double)vi), (unsigned long long)bits(va), (long long)(int64_t)va,
                   (unsigned)fbits(fa), (int)(int32_t)fa);
    }
    printf("int<->fp: %016llx\n", (unsigned long long)hash);

    /* chained: complex products and a running sum, as handlers use them */
    hash = 14695981039346656037ull;
    double sr = 0, si = 0;
    for (int k = 0; k < 2000; k++) {
        va = dbl(gen(2));
        vb = dbl(gen(2));
        double c = dbl(gen(k % 3 ? 2 : 0)), d = dbl(gen(2));
        double re = va * c - vb * d, im = va * d + vb * c;
        sr += re;
        si += im;
        mix(bits(re)), mix(bits(im));
    }
    printf("complex: %016llx sum %016llx %016llx\n", (unsigned long long)hash, (unsigned long long)bits(sr),
           (unsigned long long)bits(si));
    return 0;
}
