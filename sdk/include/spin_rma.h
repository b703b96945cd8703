/*
 * spin_rma.h - RMA, remote memory access between NICs (DiAD, seed 003
 * §III-IV; sPIN's put/get/atomics, seed 004 §3): the wire header carried
 * at the start of a UDP payload, and the window table the target NIC's
 * handlers read. docs/rma.md describes both.
 *
 * The layout is defined in Rust (crates/wire/src/rma.rs); the test
 * crates/wire/tests/rma_c_layout.rs compiles this header and checks every
 * offset, size and constant against it. Needs only <stdint.h>.
 *
 * Header fields are in network byte order (big-endian); read them with
 * rma_get16/32/64 (they also work at any alignment: after 14 bytes of
 * Ethernet the header is not 4-byte aligned). The window table is in NIC
 * memory, in the NIC's (little-endian) byte order.
 */
#ifndef SOFTSPIN_SPIN_RMA_H
#define SOFTSPIN_SPIN_RMA_H

#include <stdint.h>

#define RMA_UDP_PORT 21328 /* 0x5350, "SP" */
#define RMA_VERSION 1
#define RMA_HDR_LEN 40
/* The IP MTU packets are sized for: Ethernet's 1500 (softspin_wire::rma::MTU),
 * unless the build gives another (-DRMA_MTU=N: a NIC whose packet slot
 * takes larger frames, e.g. `softspin netsim`'s 4 KiB sc17 profile; every
 * node of a network must use the same). */
#ifndef RMA_MTU
#define RMA_MTU 1500
#endif
_Static_assert(RMA_MTU >= 576 && RMA_MTU <= 9000, "RMA_MTU: 576 (IPv4's minimum) to 9000 (jumbo frames)");
/* Payload bytes in one packet: MTU - IPv4 (20) - UDP (8) - RMA header
 * (softspin_wire::rma::max_payload). */
#define RMA_MAX_PAYLOAD (RMA_MTU - 20 - 8 - RMA_HDR_LEN)

/* kind: the transport packet type (DiAD's reliability, seed 003 §IV). */
#define RMA_KIND_DATA 0
#define RMA_KIND_ACK 1
#define RMA_KIND_NACK 2
#define RMA_KIND_UNACK 3

/* op; a response has RMA_RESPONSE set. */
#define RMA_OP_NONE 0
#define RMA_OP_WRITE 1
#define RMA_OP_READ 2
#define RMA_OP_FADD32 3
#define RMA_OP_FADD64 4
#define RMA_OP_CAS32 5
#define RMA_OP_CAS64 6
#define RMA_RESPONSE 0x80

/* status in a response; anything but OK means nothing was written. */
#define RMA_STATUS_OK 0
#define RMA_STATUS_BAD_KEY 1
#define RMA_STATUS_OUT_OF_WINDOW 2
#define RMA_STATUS_PERMISSION 3
#define RMA_STATUS_MALFORMED 4
#define RMA_STATUS_UNALIGNED 5
#define RMA_STATUS_FAILED 6

/* The header, byte for byte (docs/rma.md "Header"). */
typedef struct rma_hdr {
    uint8_t version;
    uint8_t kind;
    uint8_t op;
    uint8_t status;
    uint8_t src_rank[2];
    uint8_t dst_rank[2];
    uint8_t seq[4];
    uint8_t ack[4];
    uint8_t txn[4];
    uint8_t key[4];
    uint8_t offset[8];
    uint8_t length[4];
    uint8_t reserved[4];
} rma_hdr_t;

_Static_assert(sizeof(rma_hdr_t) == RMA_HDR_LEN, "RMA header is 40 bytes");

/* Window permissions. */
#define RMA_PERM_READ 1u
#define RMA_PERM_WRITE 2u
#define RMA_PERM_ATOMIC 4u
#define RMA_PERM_ALL 7u
/* The key of a free entry. */
#define RMA_KEY_FREE 0u
/* Entries of the window table (symbol rma_windows in the handlers' image). */
#define RMA_WINDOWS 16

/* One exported window: `size` bytes at `base`, an offset in the ECTX's host
 * window, under `key`. The host writes key last and clears it first. */
typedef struct rma_window {
    uint32_t key;
    uint32_t perms;
    uint64_t base;
    uint64_t size;
} __attribute__((__packed__, __aligned__(8))) rma_window_t;

_Static_assert(sizeof(rma_window_t) == 24, "a window entry is 24 bytes");

/* Big-endian loads and stores at any alignment. */
static inline uint32_t rma_get16(const uint8_t *p) { return ((uint32_t)p[0] << 8) | p[1]; }
static inline uint32_t rma_get32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t rma_get64(const uint8_t *p) { return ((uint64_t)rma_get32(p) << 32) | rma_get32(p + 4); }
static inline uint64_t rma_getn(const uint8_t *p, uint32_t n)
{
    uint64_t v = 0;
    for (uint32_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}
static inline void rma_putn(uint8_t *p, uint64_t v, uint32_t n)
{
    for (uint32_t i = n; i-- > 0; v >>= 8)
        p[i] = (uint8_t)v;
}
static inline void rma_put16(uint8_t *p, uint32_t v) { rma_putn(p, v, 2); }
static inline void rma_put32(uint8_t *p, uint32_t v) { rma_putn(p, v, 4); }
static inline void rma_put64(uint8_t *p, uint64_t v) { rma_putn(p, v, 8); }

/* Bytes in front of the RMA header: Ethernet (14) + IPv4 (20) + UDP (8). */
#define RMA_L2_HDRS 42u

typedef uint16_t __attribute__((__may_alias__)) rma_u16a;
typedef uint32_t __attribute__((__may_alias__)) rma_u32a;

/* RFC 1071 sum of `n` bytes at `p` (2-byte aligned) as big-endian 16-bit
 * words, folded to 16 bits (not complemented). Loads whole words, one
 * access per 4 bytes (a frame in L2 costs up to 25 cycles an access),
 * summed in the NIC's little-endian order and swapped once at the end: the
 * ones' complement sum does not depend on byte order (RFC 1071 §2 (B)). */
static inline uint32_t rma_csum(const uint8_t *p, uint32_t n)
{
    uint32_t s = 0; /* at most ~4,500 halves of 0xffff (a 9000-byte MTU): no overflow */
    if (((uintptr_t)p & 2) && n >= 2) {
        s += *(const rma_u16a *)p;
        p += 2;
        n -= 2;
    }
    for (; n >= 4; p += 4, n -= 4) {
        uint32_t w = *(const rma_u32a *)p;
        s += (w & 0xffff) + (w >> 16);
    }
    if (n >= 2) {
        s += *(const rma_u16a *)p;
        p += 2;
        n -= 2;
    }
    if (n)
        s += *p; /* the last byte is a word's high half: low in LE order */
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return ((s & 0xff) << 8) | (s >> 8);
}

/* Ethernet, IPv4 and UDP headers (RMA_L2_HDRS bytes at `out`) in front of
 * `rma_len` bytes of RMA header and payload. Addresses and ports as on the
 * wire (network order); IPv4 with TOS 0, id 0, DF, TTL 64 and its header
 * checksum; the UDP checksum 0 (optional in IPv4; rma_udp_checksum fills
 * it). Returns the frame length. */
static inline uint32_t rma_l2_headers(uint8_t *out, const uint8_t *dst_mac, const uint8_t *src_mac,
                                      const uint8_t *src_ip, const uint8_t *dst_ip, uint32_t sport,
                                      uint32_t dport, uint32_t rma_len)
{
    uint32_t udp_len = 8 + rma_len, ip_len = 20 + udp_len;
    for (int i = 0; i < 6; i++) {
        out[i] = dst_mac[i];
        out[6 + i] = src_mac[i];
    }
    out[12] = 0x08;
    out[13] = 0x00;
    uint8_t *ip = out + 14;
    ip[0] = 0x45;
    ip[1] = 0;
    rma_put16(ip + 2, ip_len);
    rma_put16(ip + 4, 0);
    rma_put16(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = 17; /* UDP */
    rma_put16(ip + 10, 0);
    for (int i = 0; i < 4; i++) {
        ip[12 + i] = src_ip[i];
        ip[16 + i] = dst_ip[i];
    }
    rma_put16(ip + 10, ~rma_csum(ip, 20) & 0xffff);
    uint8_t *udp = out + 34;
    rma_put16(udp, sport);
    rma_put16(udp + 2, dport);
    rma_put16(udp + 4, udp_len);
    rma_put16(udp + 6, 0);
    return 14 + ip_len;
}

/* The UDP checksum of a frame from rma_l2_headers, over the IPv4
 * pseudo-header, header and payload (RFC 768; a computed 0 is sent as
 * 0xffff). */
static inline void rma_udp_checksum(uint8_t *out)
{
    uint8_t *ip = out + 14, *udp = out + 34;
    uint32_t udp_len = rma_get16(udp + 4);
    uint32_t sum = rma_csum(ip + 12, 8) + 17 + udp_len + rma_csum(udp, udp_len);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    uint32_t c = ~sum & 0xffff;
    rma_put16(udp + 6, c ? c : 0xffff);
}

/* Bytes of an atomic's operand (4 or 8), 0 for other ops. */
static inline uint32_t rma_op_width(uint32_t op)
{
    return op == RMA_OP_FADD32 || op == RMA_OP_CAS32 ? 4 : op == RMA_OP_FADD64 || op == RMA_OP_CAS64 ? 8 : 0;
}

/* Operands an atomic request carries. */
static inline uint32_t rma_op_operands(uint32_t op)
{
    return op == RMA_OP_CAS32 || op == RMA_OP_CAS64 ? 2 : rma_op_width(op) ? 1 : 0;
}

/* The window permission an op needs. */
static inline uint32_t rma_op_perm(uint32_t op)
{
    return op == RMA_OP_WRITE ? RMA_PERM_WRITE : op == RMA_OP_READ ? RMA_PERM_READ : RMA_PERM_ATOMIC;
}

#endif
