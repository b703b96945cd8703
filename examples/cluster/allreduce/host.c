/*
 * allreduce's offload host program in C (`run --host-api c`): what
 * workers.py's w_offload does in Python, through libsoftspin's C host API
 * (ss_client_*, docs/host-interface.md): this host's vector from its
 * memory (UC_AR_SRC, in the NIC's shared host memory) to the NIC that
 * starts from it, as one-packet messages (allreduce.h) from a kernel UDP
 * socket, at the round's start time; then UC_DONE is polled until the NICs
 * have written this round's sum. Rounds are driven by `run`'s go files;
 * one JSON line per round on stdout (as the Python worker prints).
 *
 * usage: host CONTROL ECTX IP RANK TO TAG DTYPE MODE SIZE ROUNDS DIR TRIES TRY_MS
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <softspin.h>

#include "../uc.h"
#include "allreduce.h"

#define POLL_NS 100000L           /* between looks at UC_DONE and the go file: leave the cores to the NICs */
#define GO_WAIT_NS 60000000000ull /* a round's go file, at most */

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t); /* one clock in every namespace: the driver's start times */
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void pause_poll(void)
{
    struct timespec t = {0, POLL_NS};
    nanosleep(&t, NULL);
}

static int arg_u64(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end || v > max)
        return 0;
    *out = v;
    return 1;
}

/* The round's go file: "seq t_ns delay_rank delay_ns" (run writes it whole, by rename). */
static int wait_go(const char *dir, uint64_t r, uint64_t *seq, uint64_t *t_ns, long long *delay_rank,
                   uint64_t *delay_ns)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/go-%llu", dir, (unsigned long long)r);
    uint64_t end = now_ns() + GO_WAIT_NS;
    FILE *f;
    while (!(f = fopen(path, "r"))) {
        if (now_ns() > end)
            return 0;
        pause_poll();
    }
    unsigned long long a, b, d;
    long long c;
    int n = fscanf(f, "%llu %llu %lld %llu", &a, &b, &c, &d);
    fclose(f);
    if (n != 4)
        return 0;
    *seq = a;
    *t_ns = b;
    *delay_rank = c;
    *delay_ns = d;
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 14) {
        fprintf(stderr, "usage: %s CONTROL ECTX IP RANK TO TAG DTYPE MODE SIZE ROUNDS DIR TRIES TRY_MS\n", argv[0]);
        return 2;
    }
    uint64_t rank, to, tag, dtype, mode, size, rounds, tries, try_ms;
    struct in_addr ip;
    if (inet_pton(AF_INET, argv[3], &ip) != 1 || !arg_u64(argv[4], UC_AR_MAX_NODES - 1, &rank) ||
        !arg_u64(argv[5], UC_AR_MAX_NODES - 1, &to) || !arg_u64(argv[6], 0xff, &tag) ||
        !arg_u64(argv[7], UC_AR_DOUBLE, &dtype) || !arg_u64(argv[8], 0xffff, &mode) ||
        !arg_u64(argv[9], UC_AR_MAX, &size) || size == 0 || !arg_u64(argv[10], 1u << 20, &rounds) ||
        !arg_u64(argv[12], 100, &tries) || tries == 0 || !arg_u64(argv[13], 600000, &try_ms)) {
        fprintf(stderr, "%s: an argument is not a number in range\n", argv[0]);
        return 2;
    }
    ss_client *c;
    uint8_t *mem;
    size_t len;
    ss_ectx e;
    uint64_t off;
    if (ss_client_connect(argv[1], &c) != SS_OK) {
        fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], ss_last_error());
        return 1;
    }
    if (ss_client_host_mem(c, &mem, &len) != SS_OK || ss_client_ectx(c, argv[2], &e, &off) != SS_OK ||
        off > len || len - off < UC_AR_END) {
        fprintf(stderr, "%s: no host window of %u bytes for ECTX %s: %s\n", argv[0], UC_AR_END, argv[2],
                ss_last_error());
        ss_client_close(c);
        return 1;
    }
    uint8_t *win = mem + off;
    volatile uint64_t *done = (volatile uint64_t *)(win + UC_DONE);
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0) {
        perror("socket");
        ss_client_close(c);
        return 1;
    }
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(UC_PORT), .sin_addr = ip};
    static uint8_t pkts[(UC_AR_MAX + UC_CHUNK - 1) / UC_CHUNK][UC_HDR + UC_CHUNK];
    uint32_t n = (uint32_t)((size + UC_CHUNK - 1) / UC_CHUNK);
    puts("ready");
    fflush(stdout);
    for (uint64_t r = 0; r < rounds; r++) {
        uint64_t seq, t_ns, delay_ns;
        long long delay_rank;
        if (!wait_go(argv[11], r, &seq, &t_ns, &delay_rank, &delay_ns))
            break;
        uint32_t flags = UC_EOM | (uint32_t)tag << UC_AR_TAG_SHIFT | (uint32_t)dtype << UC_AR_DTYPE_SHIFT;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t o = k * UC_CHUNK, l = size - o < UC_CHUNK ? (uint32_t)(size - o) : UC_CHUNK;
            uint8_t *p = pkts[k];
            uc_put_hdr(p, UC_MSG_BIT | (uint32_t)rank << 20 | (uint32_t)tag << 15 | k, flags, (uint32_t)seq,
                       (uint32_t)size, o, (uint32_t)rank, (uint32_t)mode);
            memcpy(p + UC_HDR, win + UC_AR_SRC + o, l);
        }
        uint64_t start = t_ns + ((long long)rank == delay_rank ? delay_ns : 0);
        while (now_ns() + 1000000 < start)
            pause_poll();
        while (now_ns() < start)
            ;
        uint64_t t_send = now_ns(), retries = 0;
        int ok = 0;
        for (uint64_t t = 0; t < tries && !ok; t++) {
            for (uint32_t k = 0; k < n; k++) {
                uint32_t l = size - k * UC_CHUNK < UC_CHUNK ? (uint32_t)(size - k * UC_CHUNK) : UC_CHUNK;
                if (sendto(s, pkts[k], UC_HDR + l, 0, (struct sockaddr *)&dst, sizeof dst) < 0)
                    perror("sendto"); /* the round then times out and is sent again */
            }
            uint64_t end = now_ns() + try_ms * 1000000ull;
            while (!(ok = *done == seq) && now_ns() < end)
                pause_poll();
            retries += !ok;
        }
        printf("{\"round\": %llu, \"t_send\": %llu, \"t_done\": %llu, \"done\": %s, \"retries\": %llu}\n",
               (unsigned long long)r, (unsigned long long)t_send, (unsigned long long)now_ns(),
               ok ? "true" : "false", (unsigned long long)retries);
        fflush(stdout);
    }
    close(s);
    ss_client_close(c);
    return 0;
}
