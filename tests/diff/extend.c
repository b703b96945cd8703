/* Sign and zero extension of 8- and 16-bit loads (lb/lbu/lh/lhu) and of
 * narrowing conversions, through volatile memory so real loads are used. */
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

static volatile uint8_t bytes[256];
static volatile uint16_t halves[64];

int main(void)
{
    for (int i = 0; i < 256; i++)
        bytes[i] = (uint8_t)i;
    for (int i = 0; i < 64; i++)
        halves[i] = (uint16_t)(i * 0x0411u + (i & 1 ? 0x8000u : 0));

    /* Every byte value, loaded signed and unsigned. */
    for (int i = 0; i < 256; i++) {
        int32_t s = ((volatile int8_t *)bytes)[i];
        uint32_t u = bytes[i];
        mix((uint32_t)s);
        mix(u);
        if (i % 16 == 0 || (i >= 0x7e && i <= 0x81) || i == 0xff)
            printf("b[%3d]: s=%4d u=%3u sx=%08x\n", i, s, u, (uint32_t)s);
    }
    for (int i = 0; i < 64; i++) {
        int32_t s = ((volatile int16_t *)halves)[i];
        uint32_t u = halves[i];
        mix((uint32_t)s);
        mix(u);
        if (i % 4 == 0 || i == 63)
            printf("h[%2d]: s=%6d u=%5u sx=%08x\n", i, s, u, (uint32_t)s);
    }
    /* Boundary values. */
    static volatile int8_t s8[] = {0, 1, -1, 127, -128, 0x55, -0x56};
    static volatile int16_t s16[] = {0, 1, -1, 32767, -32768, 0x1234, -0x1234};
    for (unsigned i = 0; i < sizeof(s8); i++) {
        int32_t a = s8[i];
        uint32_t b = (uint8_t)s8[i];
        int32_t c = s16[i];
        uint32_t d = (uint16_t)s16[i];
        mix((uint32_t)a ^ b ^ (uint32_t)c ^ d);
        printf("edge %u: %d %u %d %u\n", i, a, b, c, d);
    }
    /* Narrowing conversions of computed values (compiler uses shifts or
     * andi for these). */
    volatile uint32_t v = 0x89abcdefu;
    for (int k = 0; k < 32; k++) {
        uint32_t x = v * (uint32_t)(k + 1) + (uint32_t)k * 0x01010101u;
        int8_t a = (int8_t)x;
        uint8_t b = (uint8_t)x;
        int16_t c = (int16_t)x;
        uint16_t d = (uint16_t)x;
        mix((uint32_t)(int32_t)a);
        mix(b);
        mix((uint32_t)(int32_t)c);
        mix(d);
        if (k % 4 == 0)
            printf("narrow %08x: %d %u %d %u\n", x, a, b, c, d);
    }
    /* Extension inside arithmetic: sums of signed bytes and halves. */
    int32_t sum8 = 0, sum16 = 0;
    uint32_t usum8 = 0, usum16 = 0;
    for (int i = 0; i < 256; i++) {
        sum8 += ((volatile int8_t *)bytes)[i];
        usum8 += bytes[i];
    }
    for (int i = 0; i < 64; i++) {
        sum16 += ((volatile int16_t *)halves)[i];
        usum16 += halves[i];
    }
    printf("sums: %d %u %d %u\n", sum8, usum8, sum16, usum16);
    printf("hash=%08x\n", hash);
    return 0;
}
