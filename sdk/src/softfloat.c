/*
 * softfloat.c - IEEE-754 soft-float helpers (libgcc/compiler-rt ABI names)
 * for RV32IMAC, which has no FPU: clang calls these for float and double
 * arithmetic, comparisons and conversions.
 *
 * Round to nearest, ties to even; subnormals, signed zeros, infinities and
 * NaN as IEEE-754 says. No exception flags. A NaN result is the canonical
 * quiet NaN (0x7ff8000000000000 / 0x7fc00000), as RISC-V's D and F
 * extensions produce. Float-to-integer conversions saturate (NaN gives 0).
 * Only integer arithmetic is used here, so nothing recurses. Not provided:
 * complex helpers (__muldc3...): write complex products out.
 */
#include <stdint.h>

typedef uint64_t u64;
typedef int64_t i64;
typedef uint32_t u32;
typedef int32_t i32;

#define SIGN (1ull << 63)
#define FRAC ((1ull << 52) - 1)
#define HIDDEN (1ull << 52)
#define INF 0x7ff0000000000000ull
#define QNAN 0x7ff8000000000000ull
#define FQNAN 0x7fc00000u
#define NOINLINE __attribute__((noinline))
/* Rarely hot: small code (program memory is 32 KiB). */
#define COLD __attribute__((noinline, minsize))

static inline u64 bits(double d)
{
    union { double d; u64 u; } x = {d};
    return x.u;
}
static inline double dbl(u64 u)
{
    union { u64 u; double d; } x = {u};
    return x.d;
}
static inline u32 fbits(float f)
{
    union { float f; u32 u; } x = {f};
    return x.u;
}
static inline float flt(u32 u)
{
    union { u32 u; float f; } x = {u};
    return x.f;
}

static inline int isnan64(u64 a) { return (a & ~SIGN) > INF; }

/* m >> n, ORing the bits shifted out into bit 0 (n >= 0). */
static inline u64 shr_sticky(u64 m, int n)
{
    if (n == 0)
        return m;
    if (n >= 64)
        return m != 0;
    return (m >> n) | ((m << (64 - n)) != 0);
}

/* Normalise m (non-zero) to its top bit at 62, adjusting e. The value is
 * m * 2^(e - 1023 - 62) throughout. */
static inline u64 norm(u64 m, int *e)
{
    int z = __builtin_clzll(m);
    if (z == 0) {
        *e += 1;
        return (m >> 1) | (m & 1);
    }
    *e -= z - 1;
    return m << (z - 1);
}

/* Sign s, value m * 2^(e - 1023 - 62), m non-zero with its top bit at 62:
 * round to a double. */
NOINLINE static u64 pack64(u64 s, int e, u64 m)
{
    if (e >= 0x7ff)
        return s | INF;
    if (e <= 0) {
        m = shr_sticky(m, 1 - e);
        e = 0;
    }
    u32 r = (u32)m & 0x3ff;
    m >>= 10;
    if (r > 0x200 || (r == 0x200 && (m & 1)))
        m++;
    /* The hidden bit (or a rounding carry) lands in the exponent field. */
    return e ? s | (((u64)(e - 1) << 52) + m) : s | m;
}

/* pack64, with the common case (a normal result) inline. */
static inline u64 round64(u64 s, int e, u64 m)
{
    if (__builtin_expect((unsigned)(e - 1) >= 0x7fe, 0))
        return pack64(s, e, m);
    u32 r = (u32)m & 0x3ff;
    m >>= 10;
    m += r > 0x200 || (r == 0x200 && (m & 1));
    return s | (((u64)(e - 1) << 52) + m);
}

/* The same for a float (24-bit significand, bias 127). */
COLD static u32 pack32(u32 s, int e, u64 m)
{
    if (e >= 0xff)
        return s | 0x7f800000u;
    if (e <= 0) {
        m = shr_sticky(m, 1 - e);
        e = 0;
    }
    u64 r = m & ((1ull << 39) - 1);
    u32 q = (u32)(m >> 39);
    if (r > (1ull << 38) || (r == (1ull << 38) && (q & 1)))
        q++;
    return e ? s | (((u32)(e - 1) << 23) + q) : s | q;
}

/* Significand with its hidden bit, and the exponent (subnormals: 1). */
static inline u64 unpack(u64 a, int *e)
{
    *e = (int)(a >> 52) & 0x7ff;
    if (*e)
        return (a & FRAC) | HIDDEN;
    *e = 1;
    return a & FRAC;
}

static inline u64 add64(u64 a, u64 b)
{
    u64 aa = a & ~SIGN, ab = b & ~SIGN;
    if (aa >= INF || ab >= INF) {
        if (aa > INF || ab > INF)
            return QNAN;
        if (aa == INF && ab == INF)
            return ((a ^ b) & SIGN) ? QNAN : a;
        return aa == INF ? a : b;
    }
    if (aa < ab) { /* |a| >= |b| from here */
        u64 t = a;
        a = b;
        b = t;
    }
    int ea, eb;
    u64 ma = unpack(a, &ea) << 9, mb = unpack(b, &eb) << 9;
    u64 s = a & SIGN;
    mb = shr_sticky(mb, ea - eb);
    u64 m;
    if ((a ^ b) & SIGN) {
        m = ma - mb;
        if (m == 0) /* exact cancellation, or both zeros of opposite sign */
            return 0;
    } else {
        m = ma + mb;
        if (m == 0) /* both zeros, same sign */
            return s;
    }
    int e = ea + 1;
    if (m >> 62)
        ;
    else if (m >> 61) {
        m <<= 1;
        e--;
    } else /* cancellation, or subnormal operands */
        m = norm(m, &e);
    return round64(s, e, m);
}

/* A subnormal's significand normalised to [2^52, 2^53), and its exponent. */
COLD static u64 subnormal(u64 m, int *e)
{
    int z = __builtin_clzll(m) - 11;
    *e = 1 - z;
    return m << z;
}

/* Non-zero finite significand normalised to [2^52, 2^53). */
static inline u64 unpack_norm(u64 a, int *e)
{
    *e = (int)(a >> 52) & 0x7ff;
    if (__builtin_expect(*e != 0, 1))
        return (a & FRAC) | HIDDEN;
    return subnormal(a & FRAC, e);
}

static inline u64 mul64(u64 a, u64 b)
{
    u64 s = (a ^ b) & SIGN, aa = a & ~SIGN, ab = b & ~SIGN;
    if (aa >= INF || ab >= INF) {
        if (aa > INF || ab > INF || aa == 0 || ab == 0)
            return QNAN;
        return s | INF;
    }
    if (aa == 0 || ab == 0)
        return s;
    int ea, eb;
    u64 ma = unpack_norm(a, &ea), mb = unpack_norm(b, &eb);
    /* 106-bit product from 32-bit halves. */
    u32 al = (u32)ma, ah = (u32)(ma >> 32), bl = (u32)mb, bh = (u32)(mb >> 32);
    u64 ll = (u64)al * bl, lh = (u64)al * bh, hl = (u64)ah * bl, hh = (u64)ah * bh;
    u64 mid = (ll >> 32) + (u32)lh + (u32)hl;
    u64 lo = (mid << 32) | (u32)ll;
    u64 hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    u64 m = (hi << 22) | (lo >> 42) | ((lo & ((1ull << 42) - 1)) != 0);
    int e = ea + eb - 1023;
    if (m >> 63) {
        m = (m >> 1) | (m & 1);
        e++;
    }
    return round64(s, e, m);
}

COLD static u64 div64(u64 a, u64 b)
{
    u64 s = (a ^ b) & SIGN, aa = a & ~SIGN, ab = b & ~SIGN;
    if (aa > INF || ab > INF)
        return QNAN;
    if (aa == INF)
        return ab == INF ? QNAN : s | INF;
    if (ab == INF)
        return s;
    if (ab == 0)
        return aa == 0 ? QNAN : s | INF;
    if (aa == 0)
        return s;
    int ea, eb;
    u64 r = unpack_norm(a, &ea), d = unpack_norm(b, &eb), q = 0;
#pragma clang loop unroll(disable)
    for (int i = 0; i < 63; i++) { /* q = floor(ma / mb * 2^62) */
        q <<= 1;
        if (r >= d) {
            r -= d;
            q |= 1;
        }
        r <<= 1;
    }
    int e = ea - eb + 1023;
    q = norm(q | (r != 0), &e);
    return pack64(s, e, q);
}

double __adddf3(double a, double b) { return dbl(add64(bits(a), bits(b))); }
double __subdf3(double a, double b) { return __adddf3(a, dbl(bits(b) ^ SIGN)); }
double __muldf3(double a, double b) { return dbl(mul64(bits(a), bits(b))); }
double __divdf3(double a, double b) { return dbl(div64(bits(a), bits(b))); }
double __negdf2(double a) { return dbl(bits(a) ^ SIGN); }

/* ---- comparisons: <0, 0, >0, or `unord` if either is a NaN ---- */

COLD static int cmp64(u64 a, u64 b, int unord)
{
    if (isnan64(a) || isnan64(b))
        return unord;
    if (((a | b) & ~SIGN) == 0)
        return 0; /* +0 == -0 */
    if ((i64)(a & b) < 0) /* both negative: reverse magnitude order */
        return a > b ? -1 : a < b;
    return (i64)a < (i64)b ? -1 : (i64)a > (i64)b;
}

int __eqdf2(double a, double b) { return cmp64(bits(a), bits(b), 1); }
int __nedf2(double a, double b) { return cmp64(bits(a), bits(b), 1); }
int __ltdf2(double a, double b) { return cmp64(bits(a), bits(b), 1); }
int __ledf2(double a, double b) { return cmp64(bits(a), bits(b), 1); }
int __cmpdf2(double a, double b) { return cmp64(bits(a), bits(b), 1); }
int __gtdf2(double a, double b) { return cmp64(bits(a), bits(b), -1); }
int __gedf2(double a, double b) { return cmp64(bits(a), bits(b), -1); }
int __unorddf2(double a, double b) { return isnan64(bits(a)) || isnan64(bits(b)); }

/* ---- integer <-> double ---- */

COLD static u64 from_int(u64 s, u64 mag)
{
    if (mag == 0)
        return 0;
    int e = 1023 + 62;
    mag = norm(mag, &e);
    return pack64(s, e, mag);
}

double __floatsidf(i32 i) { return dbl(from_int(i < 0 ? SIGN : 0, i < 0 ? -(u64)(i64)i : (u64)i)); }
double __floatunsidf(u32 i) { return dbl(from_int(0, i)); }
double __floatdidf(i64 i) { return dbl(from_int(i < 0 ? SIGN : 0, i < 0 ? -(u64)i : (u64)i)); }
double __floatundidf(u64 i) { return dbl(from_int(0, i)); }

/* |a| truncated to an integer, saturating at `max` (NaN: 0). */
COLD static u64 to_uint(u64 a, u64 max)
{
    u64 aa = a & ~SIGN;
    if (aa > INF)
        return 0;
    int e = (int)(aa >> 52);
    if (e < 1023)
        return 0;
    if (e - 1023 >= 64)
        return max;
    u64 m = (aa & FRAC) | HIDDEN;
    int sh = e - 1075;
    u64 v = sh >= 0 ? m << sh : m >> -sh; /* sh <= 11 here */
    return v > max ? max : v;
}

i32 __fixdfsi(double a)
{
    u64 x = bits(a);
    if (x >> 63)
        return (i32)-(i64)to_uint(x, 0x80000000u);
    return (i32)to_uint(x, 0x7fffffff);
}
u32 __fixunsdfsi(double a) { return bits(a) >> 63 ? 0 : (u32)to_uint(bits(a), 0xffffffffu); }
i64 __fixdfdi(double a)
{
    u64 x = bits(a);
    if (x >> 63)
        return (i64)-to_uint(x, SIGN);
    return (i64)to_uint(x, SIGN - 1);
}
u64 __fixunsdfdi(double a) { return bits(a) >> 63 ? 0 : to_uint(bits(a), ~0ull); }

/* ---- float <-> double, and float arithmetic through double ---- */

COLD static u64 ext32(u32 x)
{
    u32 ax = x & 0x7fffffffu;
    u64 s = (u64)(x >> 31) << 63;
    if (ax > 0x7f800000u)
        return QNAN;
    if (ax == 0x7f800000u)
        return s | INF;
    if (ax == 0)
        return s;
    int e = (int)(ax >> 23), z = 0;
    u32 m = ax & 0x7fffff;
    if (e == 0) { /* subnormal: normalise */
        z = __builtin_clz(m) - 8;
        m <<= z;
        e = 1;
    }
    return s | ((u64)(e - z + 1023 - 127) << 52) | ((u64)(m & 0x7fffff) << 29);
}

COLD static u32 trunc64(u64 x)
{
    u64 ax = x & ~SIGN;
    u32 s = (u32)(x >> 32) & 0x80000000u;
    if (ax > INF)
        return FQNAN;
    if (ax == INF)
        return s | 0x7f800000u;
    if (ax == 0)
        return s;
    int e;
    u64 m = unpack(x, &e) << 10; /* top bit at 62 for normals */
    e = e - 1023 + 127;
    m = norm(m, &e);
    return pack32(s, e, m);
}

double __extendsfdf2(float f) { return dbl(ext32(fbits(f))); }
float __truncdfsf2(double a) { return flt(trunc64(bits(a))); }

/* Exact in double, then one rounding: double has more than 2*24+2 bits, so
 * the result equals the correctly rounded float one. */
#define E(x) ext32(fbits(x))
float __addsf3(float a, float b) { return flt(trunc64(bits(__adddf3(dbl(E(a)), dbl(E(b)))))); }
float __subsf3(float a, float b) { return flt(trunc64(bits(__adddf3(dbl(E(a)), dbl(E(b) ^ SIGN))))); }
float __mulsf3(float a, float b) { return flt(trunc64(bits(__muldf3(dbl(E(a)), dbl(E(b)))))); }
float __divsf3(float a, float b) { return flt(trunc64(div64(E(a), E(b)))); }
float __negsf2(float a) { return flt(fbits(a) ^ 0x80000000u); }

#define FCMP(name, unord) \
    int name(float a, float b) { return cmp64(E(a), E(b), unord); }
FCMP(__eqsf2, 1)
FCMP(__nesf2, 1)
FCMP(__ltsf2, 1)
FCMP(__lesf2, 1)
FCMP(__cmpsf2, 1)
FCMP(__gtsf2, -1)
FCMP(__gesf2, -1)
int __unordsf2(float a, float b) { return (fbits(a) & 0x7fffffffu) > 0x7f800000u || (fbits(b) & 0x7fffffffu) > 0x7f800000u; }

COLD static u32 int_to_float(u32 s, u64 mag)
{
    if (mag == 0)
        return 0;
    int e = 127 + 62;
    mag = norm(mag, &e);
    return s | pack32(0, e, mag);
}

float __floatsisf(i32 i) { return flt(int_to_float(i < 0 ? 0x80000000u : 0, i < 0 ? -(u64)(i64)i : (u64)i)); }
float __floatunsisf(u32 i) { return flt(int_to_float(0, i)); }
float __floatdisf(i64 i) { return flt(int_to_float(i < 0 ? 0x80000000u : 0, i < 0 ? -(u64)i : (u64)i)); }
float __floatundisf(u64 i) { return flt(int_to_float(0, i)); }
i32 __fixsfsi(float a) { return __fixdfsi(dbl(E(a))); }
u32 __fixunssfsi(float a) { return __fixunsdfsi(dbl(E(a))); }
i64 __fixsfdi(float a) { return __fixdfdi(dbl(E(a))); }
u64 __fixunssfdi(float a) { return __fixunsdfdi(dbl(E(a))); }
