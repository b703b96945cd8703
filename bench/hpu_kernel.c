/*
 * Handler-like kernel for the HPU interpreter benchmark: the work sPIN
 * handlers do on packet buffers (IP checksum, hashing, word reductions, byte
 * copies). Built twice from this one source, natively and for RV32, so the
 * benchmark can report the interpreter's speed relative to native execution.
 * Both builds print the same digest, which the benchmark compares.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef ROUNDS
#define ROUNDS 2000
#endif
#define PKT 1024
#define NPKT 16

static uint8_t pkts[NPKT][PKT];
static uint8_t copy[PKT];

static uint16_t ip_csum(const uint8_t *p, uint32_t n) {
    uint32_t s = 0;
    for (uint32_t i = 0; i + 1 < n; i += 2) s += (uint32_t)p[i] << 8 | p[i + 1];
    while (s >> 16) s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

static uint32_t fnv1a(const uint8_t *p, uint32_t n) {
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < n; i++) { h ^= p[i]; h *= 16777619u; }
    return h;
}

static uint32_t word_sum(const uint32_t *w, uint32_t n) {
    uint32_t s = 0, x = 0;
    for (uint32_t i = 0; i < n; i++) { s += w[i]; x ^= w[i] >> (i & 7); }
    return s ^ x;
}

static void byte_copy(uint8_t *d, const uint8_t *s, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) d[i] = s[i];
}

int main(void) {
    uint32_t seed = 12345;
    for (int k = 0; k < NPKT; k++)
        for (int i = 0; i < PKT; i++) { seed = seed * 1103515245u + 12345u; pkts[k][i] = (uint8_t)(seed >> 16); }
    uint32_t digest = 0;
    for (int r = 0; r < ROUNDS; r++) {
        const uint8_t *p = pkts[r % NPKT];
        digest += ip_csum(p, PKT);
        digest ^= fnv1a(p, 256);
        digest += word_sum((const uint32_t *)p, PKT / 4);
        byte_copy(copy, p, 256);
        digest = (digest << 5 | digest >> 27) ^ copy[r & 255];
        pkts[r % NPKT][r & (PKT - 1)] ^= (uint8_t)digest;
    }
    printf("digest=%08x rounds=%d\n", digest, ROUNDS);
    return 0;
}
