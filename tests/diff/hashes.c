/* Hash functions: FNV-1a (32 and 64 bit), MurmurHash3 x86_32, Jenkins
 * one-at-a-time and a jhash-style three-word mixer, over known vectors and
 * LCG-generated keys of many lengths and alignments. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

static uint32_t fnv1a32(const uint8_t *p, unsigned n)
{
    uint32_t h = 2166136261u;
    while (n--) {
        h ^= *p++;
        h *= 16777619u;
    }
    return h;
}

static uint64_t fnv1a64(const uint8_t *p, unsigned n)
{
    uint64_t h = 14695981039346656037ull;
    while (n--) {
        h ^= *p++;
        h *= 1099511628211ull;
    }
    return h;
}

static uint32_t murmur3_32(const uint8_t *p, unsigned n, uint32_t seed)
{
    const uint32_t c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
    uint32_t h = seed;
    unsigned blocks = n / 4;
    for (unsigned i = 0; i < blocks; i++) {
        uint32_t k;
        memcpy(&k, p + 4 * i, 4); /* little-endian, possibly unaligned */
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
        h = rotl32(h, 13);
        h = h * 5 + 0xe6546b64u;
    }
    const uint8_t *tail = p + 4 * blocks;
    uint32_t k = 0;
    switch (n & 3) {
    case 3:
        k ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        k ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        k ^= tail[0];
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
    }
    h ^= n;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

static uint32_t one_at_a_time(const uint8_t *p, unsigned n)
{
    uint32_t h = 0;
    while (n--) {
        h += *p++;
        h += h << 10;
        h ^= h >> 6;
    }
    h += h << 3;
    h ^= h >> 11;
    h += h << 15;
    return h;
}

/* jhash-style: mix three words with add/sub/xor/rotate rounds. */
#define MIX3(a, b, c)                                                         \
    do {                                                                      \
        a -= c; a ^= rotl32(c, 4);  c += b;                                   \
        b -= a; b ^= rotl32(a, 6);  a += c;                                   \
        c -= b; c ^= rotl32(b, 8);  b += a;                                   \
        a -= c; a ^= rotl32(c, 16); c += b;                                   \
        b -= a; b ^= rotl32(a, 19); a += c;                                   \
        c -= b; c ^= rotl32(b, 4);  b += a;                                   \
    } while (0)

static uint32_t jhash_words(const uint32_t *k, unsigned n, uint32_t init)
{
    uint32_t a, b, c;
    a = b = c = 0xdeadbeefu + (n << 2) + init;
    while (n > 3) {
        a += k[0];
        b += k[1];
        c += k[2];
        MIX3(a, b, c);
        n -= 3;
        k += 3;
    }
    switch (n) {
    case 3: c += k[2]; /* fall through */
    case 2: b += k[1]; /* fall through */
    case 1:
        a += k[0];
        c ^= b; c -= rotl32(b, 14);
        a ^= c; a -= rotl32(c, 11);
        b ^= a; b -= rotl32(a, 25);
        c ^= b; c -= rotl32(b, 16);
        a ^= c; a -= rotl32(c, 4);
        b ^= a; b -= rotl32(a, 14);
        c ^= b; c -= rotl32(b, 24);
    }
    return c;
}

static uint8_t keys[300];
static uint32_t words[64];

int main(void)
{
    static const char *vec[] = {"", "a", "foobar", "hello", "softspin NIC",
                                "The quick brown fox jumps over the lazy dog"};
    for (unsigned i = 0; i < sizeof vec / sizeof vec[0]; i++) {
        const uint8_t *p = (const uint8_t *)vec[i];
        unsigned n = (unsigned)strlen(vec[i]);
        printf("\"%s\": fnv32 %08x fnv64 %016llx murmur %08x/%08x oaat %08x\n",
               vec[i], fnv1a32(p, n), (unsigned long long)fnv1a64(p, n),
               murmur3_32(p, n, 0), murmur3_32(p, n, 0x9747b28cu),
               one_at_a_time(p, n));
    }

    uint32_t s = 7;
    for (unsigned i = 0; i < sizeof keys; i++) {
        s = s * 1664525u + 1013904223u;
        keys[i] = (uint8_t)(s >> 23);
    }
    for (unsigned i = 0; i < 64; i++) {
        s = s * 1664525u + 1013904223u;
        words[i] = s;
    }
    uint32_t acc = 0;
    uint64_t acc64 = 0;
    for (unsigned len = 0; len <= 260; len += (len < 24 ? 1 : 17)) {
        for (unsigned off = 0; off < 4; off++) {
            const uint8_t *p = keys + off;
            uint32_t f = fnv1a32(p, len), m = murmur3_32(p, len, off);
            uint32_t o = one_at_a_time(p, len);
            uint64_t f64 = fnv1a64(p, len);
            acc = rotl32(acc, 5) ^ f ^ rotl32(m, 11) ^ rotl32(o, 23);
            acc64 = acc64 * 31u + f64;
            if (off == 1 && len % 8 == 0)
                printf("len %3u: %08x %08x %08x %016llx\n", len, f, m, o,
                       (unsigned long long)f64);
        }
    }
    for (unsigned n = 0; n <= 64; n += 5) {
        uint32_t j = jhash_words(words, n, n * 3);
        acc ^= j;
        printf("jhash %2u words: %08x\n", n, j);
    }
    /* Hash-table style use: bucket histogram of 1000 keys. */
    unsigned buckets[16] = {0};
    for (uint32_t k = 0; k < 1000; k++) {
        uint32_t key[2] = {k, k * 2654435761u};
        buckets[jhash_words(key, 2, 0x1234) & 15]++;
    }
    printf("buckets:");
    for (int i = 0; i < 16; i++)
        printf(" %u", buckets[i]);
    printf("\nacc=%08x acc64=%016llx\n", acc, (unsigned long long)acc64);
    return 0;
}
