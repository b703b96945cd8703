/*
 * The key-value store's C client (kvstore.h): one put or get, sent from a
 * kernel UDP socket to the key's owner, whose NIC puts the reply record
 * into this node's host memory; the record is read there through the C
 * host library (ss_client_connect on this node's control socket, the
 * shared host memory in place). Run inside the node's namespace:
 *
 *   client CONTROL ECTX OWNER_IP MY_RANK SLOT SEQ get KEY_HEX
 *   client CONTROL ECTX OWNER_IP MY_RANK SLOT SEQ put KEY_HEX VALUE_HEX
 *   client hash NODES KEY_HEX            (prints the owner and the bucket)
 *
 * Prints "STATUS VALUE_HEX" ("-" for no value). A request without reply in
 * UC_KV_TIMEOUT_MS is sent again with the next seq, UC_KV_TRIES times at most. Exit status: 0 a
 * reply, 1 none or an error of the library, 2 bad arguments.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <softspin.h>

#include "../uc.h"
#include "kvstore.h"

static int usage(void)
{
    fprintf(stderr, "usage: client CONTROL ECTX OWNER_IP MY_RANK SLOT SEQ get KEY_HEX\n"
                    "       client CONTROL ECTX OWNER_IP MY_RANK SLOT SEQ put KEY_HEX VALUE_HEX\n"
                    "       client hash NODES KEY_HEX\n");
    return 2;
}

/* Hex to bytes; the length, or -1 when it is not hex or over `cap`. */
static long unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = strlen(s);
    if (n % 2 || n / 2 > cap)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int v = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        if (v < 0)
            return -1;
        out[i / 2] = (uint8_t)(i % 2 ? out[i / 2] | v : v << 4);
    }
    return (long)(n / 2);
}

static int parse_u32(const char *s, uint32_t max, uint32_t *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || v > max)
        return 0;
    *out = (uint32_t)v;
    return 1;
}

static void le16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static uint32_t rd32(const volatile uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    static uint8_t key[UC_KV_KEY_MAX], val[UC_KV_VAL_MAX], pkt[UC_HDR + UC_KV_REQ_HDR + UC_KV_KEY_MAX + UC_KV_VAL_MAX];
    if (argc == 4 && strcmp(argv[1], "hash") == 0) {
        uint32_t nodes;
        long kl = unhex(argv[3], key, sizeof key);
        if (!parse_u32(argv[2], 1u << 16, &nodes) || nodes == 0 || kl <= 0)
            return usage();
        uint32_t h = uc_kv_fnv(UC_KV_FNV_BASIS, key, (uint32_t)kl);
        printf("%u %u\n", uc_kv_owner(h, nodes), uc_kv_bucket(h, nodes));
        return 0;
    }
    if (argc < 9)
        return usage();
    int put = strcmp(argv[7], "put") == 0;
    uint32_t rank, slot, seq;
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(UC_PORT)};
    long kl = unhex(argv[8], key, sizeof key), vl = put && argc == 10 ? unhex(argv[9], val, sizeof val) : 0;
    if ((!put && strcmp(argv[7], "get") != 0) || argc != (put ? 10 : 9) || kl <= 0 || vl < 0 ||
        inet_pton(AF_INET, argv[3], &dst.sin_addr) != 1 || !parse_u32(argv[4], 0xffff, &rank) ||
        !parse_u32(argv[5], UC_KV_SLOTS - 1, &slot) || !parse_u32(argv[6], 0xffffffffu - UC_KV_TRIES, &seq))
        return usage();

    ss_client *c;
    uint8_t *mem;
    size_t mem_len;
    ss_ectx e;
    uint64_t win;
    if (ss_client_connect(argv[1], &c) != 0 || ss_client_host_mem(c, &mem, &mem_len) != 0 ||
        ss_client_ectx(c, argv[2], &e, &win) != 0) {
        fprintf(stderr, "client: %s: %s\n", argv[1], ss_last_error());
        return 1;
    }
    uint64_t at = win + UC_KV_REPLY + (uint64_t)slot * UC_KV_SLOT_SIZE;
    if (at + UC_KV_SLOT_SIZE > mem_len) {
        fprintf(stderr, "client: the window (%zu bytes of host memory) has no reply slot %u\n", mem_len, slot);
        ss_client_close(c);
        return 1;
    }
    const volatile uint8_t *rec = mem + at;
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0) {
        perror("client: socket");
        ss_client_close(c);
        return 1;
    }

    /* The request: uc.h's header (big-endian), then kvstore.h's (little-endian). */
    uint32_t len = UC_KV_REQ_HDR + (uint32_t)kl + (uint32_t)vl;
    uint8_t *d = pkt + UC_HDR;
    le16(d, slot);
    le16(d + 2, (uint32_t)kl);
    le16(d + 4, (uint32_t)vl);
    le16(d + 6, 0);
    memcpy(d + UC_KV_REQ_HDR, key, (size_t)kl);
    memcpy(d + UC_KV_REQ_HDR + kl, val, (size_t)vl);
    for (int try = 0; try < UC_KV_TRIES; try++) {
        seq++;
        uc_put_hdr(pkt, UC_MSG_BIT | rank << 20 | (seq & 0xfffff), UC_EOM, seq, len, 0, rank,
                   put ? UC_MODE_KV_PUT : UC_MODE_KV_GET);
        if (sendto(s, pkt, UC_HDR + len, 0, (struct sockaddr *)&dst, sizeof dst) < 0) {
            perror("client: sendto");
            break;
        }
        /* Poll the slot: the record is whole once its seq and check match. */
        static uint8_t copy[UC_KV_REC_HDR + UC_KV_VAL_MAX];
        for (double end = now_s() + (UC_KV_TIMEOUT_MS / 1000.0); now_s() < end;) {
            if (rd32(rec) != seq)
                continue;
            uint32_t n = rd32(rec + 8);
            if (n > UC_KV_VAL_MAX)
                continue;
            for (uint32_t i = 0; i < UC_KV_REC_HDR + n; i++)
                copy[i] = rec[i];
            if (rd32(copy) != seq || rd32(copy + 8) != n ||
                rd32(copy + 12) != uc_kv_check(copy, copy + UC_KV_REC_HDR, n))
                continue;
            printf("%u ", rd32(copy + 4));
            for (uint32_t i = 0; i < n; i++)
                printf("%02x", copy[UC_KV_REC_HDR + i]);
            printf("%s\n", n ? "" : "-");
            close(s);
            ss_client_close(c);
            return 0;
        }
    }
    fprintf(stderr, "client: no reply from %s after %d tries\n", argv[3], UC_KV_TRIES);
    close(s);
    ss_client_close(c);
    return 1;
}
