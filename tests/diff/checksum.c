/* Checksums over known vectors and LCG data of many lengths and offsets:
 * the Internet checksum (RFC 1071), CRC-32 (bitwise and table-driven) and
 * Adler-32. */
#include <stdint.h>
#include <stdio.h>

static uint8_t data[1100];

static uint16_t inet_checksum(const uint8_t *p, unsigned len)
{
    uint32_t sum = 0;
    for (; len >= 2; p += 2, len -= 2)
        sum += (uint32_t)p[0] << 8 | p[1];
    if (len)
        sum += (uint32_t)p[0] << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

static uint32_t crc32_bitwise(const uint8_t *p, unsigned len)
{
    uint32_t crc = 0xffffffffu;
    while (len--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
    }
    return ~crc;
}

static uint32_t crc_table[256];
static void crc32_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc32_table(uint32_t crc, const uint8_t *p, unsigned len)
{
    crc = ~crc;
    while (len--)
        crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static uint32_t adler32(const uint8_t *p, unsigned len)
{
    uint32_t a = 1, b = 0;
    while (len) {
        unsigned chunk = len < 5552 ? len : 5552; /* no overflow before mod */
        len -= chunk;
        while (chunk--) {
            a += *p++;
            b += a;
        }
        a %= 65521u;
        b %= 65521u;
    }
    return b << 16 | a;
}

int main(void)
{
    static const char v1[] = "123456789";
    static const char v2[] = "Wikipedia";
    crc32_init();
    printf("crc32(\"%s\") = %08x / %08x\n", v1,
           crc32_bitwise((const uint8_t *)v1, 9),
           crc32_table(0, (const uint8_t *)v1, 9));
    printf("adler32(\"%s\") = %08x\n", v2, adler32((const uint8_t *)v2, 9));

    /* A real IPv4 header: its checksum verifies to 0 once filled in. */
    uint8_t ip[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40,
                      0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8,
                      0x00, 0xc7};
    uint16_t c = inet_checksum(ip, 20);
    ip[10] = (uint8_t)(c >> 8);
    ip[11] = (uint8_t)c;
    printf("ipv4 header checksum %04x, verify %04x\n", c,
           inet_checksum(ip, 20));

    uint32_t seed = 42;
    for (unsigned i = 0; i < sizeof data; i++) {
        seed = seed * 1664525u + 1013904223u;
        data[i] = (uint8_t)(seed >> 24);
    }
    uint32_t acc = 0;
    unsigned mismatches = 0;
    for (unsigned len = 0; len < 300; len += (len < 40 ? 1 : 13)) {
        for (unsigned off = 0; off < 4; off++) {
            const uint8_t *p = data + off * 7;
            uint16_t ic = inet_checksum(p, len);
            uint32_t cb = crc32_bitwise(p, len);
            uint32_t ct = crc32_table(0, p, len);
            /* Incremental CRC over two pieces must equal the one-shot. */
            uint32_t ci = crc32_table(crc32_table(0, p, len / 3), p + len / 3,
                                      len - len / 3);
            uint32_t ad = adler32(p, len);
            mismatches += (cb != ct) + (ct != ci);
            acc = acc * 31u + ic;
            acc = acc * 31u + ct;
            acc = acc * 31u + ad;
            if (off == 0 && (len % 16 == 0 || len < 4))
                printf("len %3u: inet %04x crc %08x adler %08x\n", len, ic,
                       ct, ad);
        }
    }
    printf("full: inet %04x crc %08x adler %08x\n",
           inet_checksum(data, sizeof data),
           crc32_table(0, data, sizeof data), adler32(data, sizeof data));
    printf("mismatches=%u acc=%08x\n", mismatches, acc);
    return 0;
}
