/* memcpy / memmove / memset / memcmp over every small source and
 * destination alignment and length, checked byte-by-byte against simple
 * reference loops (including the guard bytes around the target). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define BUF 128
#define MAXLEN 72
#define ALIGNS 8

static uint8_t src[BUF], dst[BUF], ref[BUF];
static uint32_t hash = 2166136261u;
static unsigned failures;

static void mix_buf(const uint8_t *p, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        hash ^= p[i];
        hash *= 16777619u;
    }
}

static void fill(uint8_t *p, unsigned n, uint32_t seed)
{
    for (unsigned i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

static void check(const char *what, unsigned a, unsigned b, unsigned len)
{
    for (unsigned i = 0; i < BUF; i++) {
        if (dst[i] != ref[i]) {
            if (failures < 10)
                printf("FAIL %s a=%u b=%u len=%u at %u: %02x != %02x\n", what,
                       a, b, len, i, dst[i], ref[i]);
            failures++;
            return;
        }
    }
}

/* The compiler must not turn these into library calls; volatile stops it. */
static void ref_copy(uint8_t *d, const uint8_t *s, unsigned n)
{
    volatile uint8_t *vd = d;
    for (unsigned i = 0; i < n; i++)
        vd[i] = s[i];
}

int main(void)
{
    fill(src, BUF, 1);

    for (unsigned len = 0; len <= MAXLEN; len++) {
        uint32_t before = hash;
        for (unsigned sa = 0; sa < ALIGNS; sa++) {
            for (unsigned da = 0; da < ALIGNS; da++) {
                fill(dst, BUF, len * 64 + sa * 8 + da);
                memcpy(ref, dst, BUF);
                ref_copy(ref + 16 + da, src + sa, len);
                void *r = memcpy(dst + 16 + da, src + sa, len);
                if (r != dst + 16 + da)
                    printf("memcpy return value wrong\n");
                check("memcpy", sa, da, len);
                mix_buf(dst, BUF);

                fill(dst, BUF, 7 + len);
                memcpy(ref, dst, BUF);
                for (unsigned i = 0; i < len; i++)
                    ((volatile uint8_t *)ref)[16 + da + i] = (uint8_t)(sa * 31 + 0x80);
                memset(dst + 16 + da, (int)(sa * 31 + 0x80 + 0x100 * sa), len);
                check("memset", sa, da, len);
                mix_buf(dst, BUF);
            }
        }
        /* memmove with overlap in both directions, all relative shifts. */
        for (unsigned off = 0; off < 16; off++) {
            for (int dir = 0; dir < 2; dir++) {
                unsigned s = 20 + (dir ? off : 0), d = 20 + (dir ? 0 : off);
                fill(dst, BUF, len + off * 3 + (unsigned)dir);
                memcpy(ref, dst, BUF);
                uint8_t tmp[BUF];
                ref_copy(tmp, ref + s, len);
                ref_copy(ref + d, tmp, len);
                memmove(dst + d, dst + s, len);
                check(dir ? "memmove-down" : "memmove-up", s, d, len);
                mix_buf(dst, BUF);
            }
        }
        /* memcmp sign and zero results. */
        fill(dst, BUF, 99);
        memcpy(ref, dst, BUF);
        int eq = memcmp(dst + 3, ref + 3, len);
        int lt = 0, gt = 0;
        if (len) {
            ref[3 + len - 1] ^= 0x80;
            int c = memcmp(dst + 3, ref + 3, len);
            lt = (c < 0) - (c > 0);
            gt = (memcmp(ref + 3, dst + 3, len) > 0) - (memcmp(ref + 3, dst + 3, len) < 0);
        }
        hash ^= (uint32_t)(eq != 0) | (uint32_t)(lt & 3) << 4 | (uint32_t)(gt & 3) << 8;
        if (len % 8 == 0 || len < 9)
            printf("len %2u: hash %08x -> %08x cmp %d %d %d\n", len, before,
                   hash, eq != 0, lt, gt);
    }
    /* strings */
    char s1[32], s2[32];
    strcpy(s1, "softspin");
    strcpy(s2, "softspin!");
    printf("str: %u %u %d %d %d %d\n", (unsigned)strlen(s1),
           (unsigned)strlen(s2), strcmp(s1, s2) < 0, strcmp(s2, s1) > 0,
           strncmp(s1, s2, 8) == 0, strcmp(s1, s1) == 0);
    printf("failures=%u\nhash=%08x\n", failures, hash);
    return 0;
}
