/* Byte and halfword loads/stores: sb/sh into words and read back (little-
 * endian), memcpy-based unaligned accesses at every offset, packed struct
 * fields (byte-wise access sequences) and struct copies. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint32_t hash = 2166136261u;
static void mix(uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        hash ^= (v >> (8 * i)) & 0xff;
        hash *= 16777619u;
    }
}

static uint32_t lcg_state = 12345;
static uint32_t lcg(void)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lcg_state;
}

struct __attribute__((packed)) pk {
    uint8_t a;
    uint32_t b;
    uint16_t c;
    int16_t d;
    uint8_t e;
    int32_t f;
};

struct plain {
    uint32_t w[5];
    uint16_t h[3];
    uint8_t b[7];
};

static volatile uint32_t words[8];
static uint8_t buf[64];

int main(void)
{
    /* Byte stores into each lane of a word, then word loads. */
    for (int lane = 0; lane < 4; lane++) {
        words[0] = 0x11223344u;
        ((volatile uint8_t *)words)[lane] = (uint8_t)(0xa0 + lane);
        uint32_t w = words[0];
        mix(w);
        printf("sb lane %d: %08x\n", lane, w);
    }
    for (int lane = 0; lane < 2; lane++) {
        words[1] = 0xcafebabeu;
        ((volatile uint16_t *)words)[2 + lane] = (uint16_t)(0x8001 + lane);
        uint32_t w = words[1];
        mix(w);
        printf("sh lane %d: %08x\n", lane, w);
    }
    /* Word store, then byte/halfword loads of each lane. */
    words[2] = 0x8091a2b3u;
    for (int i = 0; i < 4; i++) {
        uint32_t u = ((volatile uint8_t *)words)[8 + i];
        int32_t s = ((volatile int8_t *)words)[8 + i];
        mix(u ^ (uint32_t)s);
        printf("lb %d: %02x %d\n", i, u, s);
    }
    for (int i = 0; i < 2; i++) {
        uint32_t u = ((volatile uint16_t *)words)[4 + i];
        int32_t s = ((volatile int16_t *)words)[4 + i];
        mix(u ^ (uint32_t)s);
        printf("lh %d: %04x %d\n", i, u, s);
    }

    /* Unaligned accesses via memcpy at every offset. */
    for (int i = 0; i < 64; i++)
        buf[i] = (uint8_t)(i * 37 + 11);
    for (int off = 0; off < 8; off++) {
        uint32_t w;
        uint16_t h;
        uint64_t d;
        memcpy(&w, buf + off, 4);
        memcpy(&h, buf + off + 1, 2);
        memcpy(&d, buf + off + 3, 8);
        mix(w);
        mix(h);
        mix((uint32_t)d ^ (uint32_t)(d >> 32));
        printf("unaligned +%d: %08x %04x %016llx\n", off, w, h,
               (unsigned long long)d);
        /* Unaligned stores, then read back as bytes. */
        uint32_t sw = 0xdeadbeefu + (uint32_t)off;
        memcpy(buf + 40 + off, &sw, 4);
        printf("  bytes: %02x %02x %02x %02x %02x\n", buf[40 + off],
               buf[41 + off], buf[42 + off], buf[43 + off], buf[44 + off]);
        mix(buf[40 + off] | (uint32_t)buf[44 + off] << 8);
    }

    /* Packed structs: fields at odd offsets. */
    static struct pk arr[5];
    for (int i = 0; i < 5; i++) {
        arr[i].a = (uint8_t)lcg();
        arr[i].b = lcg();
        arr[i].c = (uint16_t)lcg();
        arr[i].d = (int16_t)(lcg() >> 16);
        arr[i].e = (uint8_t)(lcg() >> 24);
        arr[i].f = (int32_t)lcg();
    }
    for (int i = 0; i < 5; i++) {
        volatile struct pk *p = &arr[i];
        mix(p->a);
        mix(p->b);
        mix(p->c);
        mix((uint32_t)p->d);
        mix(p->e);
        mix((uint32_t)p->f);
        printf("pk %d: %u %08x %u %d %u %d\n", i, p->a, p->b, p->c, p->d,
               p->e, p->f);
    }
    printf("sizeof pk=%u\n", (unsigned)sizeof(struct pk));
    const uint8_t *raw = (const uint8_t *)arr;
    uint32_t rawsum = 0;
    for (unsigned i = 0; i < sizeof(arr); i++)
        rawsum = rawsum * 31u + raw[i];
    printf("packed bytes sum: %08x\n", rawsum);
    mix(rawsum);

    /* Struct copies (the compiler emits memcpy or word/half/byte moves). */
    struct plain a, b;
    for (int i = 0; i < 5; i++)
        a.w[i] = lcg();
    for (int i = 0; i < 3; i++)
        a.h[i] = (uint16_t)lcg();
    for (int i = 0; i < 7; i++)
        a.b[i] = (uint8_t)lcg();
    b = a;
    b.h[1] ^= 0xffff;
    b.b[6]++;
    uint32_t cs = 0;
    for (int i = 0; i < 5; i++)
        cs = cs * 33u + b.w[i];
    for (int i = 0; i < 3; i++)
        cs = cs * 33u + b.h[i];
    for (int i = 0; i < 7; i++)
        cs = cs * 33u + b.b[i];
    printf("struct copy: %08x %04x %02x\n", cs, b.h[1], b.b[6]);
    mix(cs);
    printf("hash=%08x\n", hash);
    return 0;
}
