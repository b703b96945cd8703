/* Atomics on a single hart, so every outcome is deterministic: the A
 * extension's amo*.w (via __atomic builtins, and inline asm for min/max),
 * LR/SC loops (compare-exchange, sub-word atomics, a hand-written LR/SC
 * fetch-and-multiply) and store-conditional failure without a reservation.
 * Natively the same operations use __atomic builtins / plain C. */
#include <stdint.h>
#include <stdio.h>

static uint32_t hash = 2166136261u;
static void mix(uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        hash ^= (v >> (8 * i)) & 0xff;
        hash *= 16777619u;
    }
}

#ifdef __riscv
#define AMO(name, insn, type)                                                 \
    static type name(volatile type *p, type v)                                \
    {                                                                         \
        type old;                                                             \
        __asm__ volatile(insn " %0, %2, %1"                                   \
                         : "=r"(old), "+A"(*p)                                \
                         : "r"(v)                                             \
                         : "memory");                                         \
        return old;                                                           \
    }
AMO(amo_min, "amomin.w", int32_t)
AMO(amo_max, "amomax.w", int32_t)
AMO(amo_minu, "amominu.w", uint32_t)
AMO(amo_maxu, "amomaxu.w", uint32_t)

/* fetch-and-multiply built from lr.w/sc.w */
static uint32_t lrsc_fetch_mul(volatile uint32_t *p, uint32_t m)
{
    uint32_t old, tmp, fail;
    __asm__ volatile("1: lr.w %0, %3\n\t"
                     "mul %1, %0, %4\n\t"
                     "sc.w %2, %1, %3\n\t"
                     "bnez %2, 1b"
                     : "=&r"(old), "=&r"(tmp), "=&r"(fail), "+A"(*p)
                     : "r"(m)
                     : "memory");
    return old;
}

/* sc.w after a reservation was consumed by an earlier sc.w must fail. */
static uint32_t sc_without_reservation(volatile uint32_t *p, uint32_t v)
{
    uint32_t old, fail1, fail2;
    __asm__ volatile("lr.w %0, %3\n\t"
                     "sc.w %1, %4, %3\n\t"
                     "sc.w %2, %4, %3"
                     : "=&r"(old), "=&r"(fail1), "=&r"(fail2), "+A"(*p)
                     : "r"(v)
                     : "memory");
    return (fail1 != 0) | ((fail2 != 0) << 1);
}
#else
#define AMO(name, type, cmp)                                                  \
    static type name(volatile type *p, type v)                                \
    {                                                                         \
        type old = *p;                                                        \
        *p = (v cmp old) ? v : old;                                           \
        return old;                                                           \
    }
AMO(amo_min, int32_t, <)
AMO(amo_max, int32_t, >)
AMO(amo_minu, uint32_t, <)
AMO(amo_maxu, uint32_t, >)

static uint32_t lrsc_fetch_mul(volatile uint32_t *p, uint32_t m)
{
    uint32_t old = *p;
    *p = old * m;
    return old;
}

static uint32_t sc_without_reservation(volatile uint32_t *p, uint32_t v)
{
    *p = v;             /* first sc.w succeeds, second fails */
    return 2;
}
#endif

static volatile uint32_t word;
static volatile int32_t sword;
static volatile uint8_t bytes[4];
static volatile uint16_t halves[2];

int main(void)
{
    static const uint32_t ops[] = {0, 1, 0xffffffff, 0x80000000, 0x7fffffff,
                                   0x12345678, 0x0000ffff, 0xf0f0f0f0};
    const int n = (int)(sizeof(ops) / sizeof(ops[0]));

    for (int i = 0; i < n; i++) {
        uint32_t r[9], m[9];
        int k = 0;
        word = 0x5a5aa5a5u;
        r[k] = __atomic_fetch_add(&word, ops[i], __ATOMIC_SEQ_CST); m[k++] = word;
        r[k] = __atomic_fetch_and(&word, ~ops[i], __ATOMIC_SEQ_CST); m[k++] = word;
        r[k] = __atomic_fetch_or(&word, ops[i] >> 3, __ATOMIC_SEQ_CST); m[k++] = word;
        r[k] = __atomic_fetch_xor(&word, ops[i] * 3u, __ATOMIC_SEQ_CST); m[k++] = word;
        r[k] = __atomic_exchange_n(&word, ops[i] ^ 0x00ff00ffu, __ATOMIC_SEQ_CST); m[k++] = word;
        r[k] = amo_minu(&word, ops[(i + 3) % n]); m[k++] = word;
        r[k] = amo_maxu(&word, ops[(i + 5) % n]); m[k++] = word;
        sword = (int32_t)ops[i];
        r[k] = (uint32_t)amo_min(&sword, (int32_t)ops[(i + 1) % n]); m[k++] = (uint32_t)sword;
        r[k] = (uint32_t)amo_max(&sword, (int32_t)ops[(i + 2) % n]); m[k++] = (uint32_t)sword;
        printf("op %08x:", ops[i]);
        for (int j = 0; j < k; j++) {
            mix(r[j]);
            mix(m[j]);
            printf(" %08x/%08x", r[j], m[j]);
        }
        printf("\n");
    }

    /* Compare-exchange: success and failure paths. */
    word = 100;
    uint32_t expected = 100;
    int ok1 = __atomic_compare_exchange_n(&word, &expected, 200, 0,
                                          __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    uint32_t after1 = word, exp1 = expected;
    expected = 100;
    int ok2 = __atomic_compare_exchange_n(&word, &expected, 300, 0,
                                          __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    printf("cas: %d %u %u | %d %u %u\n", ok1, after1, exp1, ok2, word,
           expected);
    mix((uint32_t)ok1 ^ after1 ^ exp1);
    mix((uint32_t)ok2 ^ word ^ expected);

    /* Counting loop with CAS retries (never contended here). */
    word = 1;
    for (int i = 0; i < 50; i++) {
        uint32_t cur = __atomic_load_n(&word, __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(&word, &cur, cur * 3u + 1u, 1,
                                            __ATOMIC_ACQ_REL,
                                            __ATOMIC_RELAXED)) {
        }
    }
    printf("cas loop: %08x\n", word);
    mix(word);

    /* LR/SC fetch-multiply and SC failure. */
    word = 7;
    for (int i = 0; i < 10; i++)
        mix(lrsc_fetch_mul(&word, 0x01000193u));
    printf("lrsc mul: %08x\n", word);
    word = 0x1111;
    uint32_t scr = sc_without_reservation(&word, 0x2222);
    printf("sc flags: %u word %08x\n", scr, word);
    mix(scr ^ word);

    /* Sub-word atomics: the compiler builds masked LR/SC loops on RV32. */
    bytes[0] = 0xf0; bytes[1] = 0x0f; bytes[2] = 0x80; bytes[3] = 0x7f;
    halves[0] = 0x8000; halves[1] = 0x7fff;
    for (int i = 0; i < 20; i++) {
        uint8_t ob = __atomic_fetch_add(&bytes[i & 3], (uint8_t)(i * 17 + 3),
                                        __ATOMIC_SEQ_CST);
        uint16_t oh = __atomic_fetch_sub(&halves[i & 1],
                                         (uint16_t)(i * 4099 + 1),
                                         __ATOMIC_SEQ_CST);
        uint8_t xb = __atomic_exchange_n(&bytes[(i + 1) & 3],
                                         (uint8_t)(bytes[(i + 1) & 3] ^ 0x5a),
                                         __ATOMIC_SEQ_CST);
        mix(ob | (uint32_t)oh << 8 | (uint32_t)xb << 24);
    }
    printf("subword: %02x %02x %02x %02x %04x %04x\n", bytes[0], bytes[1],
           bytes[2], bytes[3], halves[0], halves[1]);
    mix(bytes[0] | bytes[1] << 8 | bytes[2] << 16 | (uint32_t)bytes[3] << 24);
    mix(halves[0] | (uint32_t)halves[1] << 16);

    /* Plain atomic loads/stores and fences. */
    __atomic_store_n(&word, 0xabcdef01u, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    printf("load: %08x\n", __atomic_load_n(&word, __ATOMIC_ACQUIRE));
    printf("hash=%08x\n", hash);
    return 0;
}
