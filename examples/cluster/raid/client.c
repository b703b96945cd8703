/*
 * The RAID-5 use case's client in C (seed 004 §5.3): one write, striped
 * over the four data nodes, on the C host library (docs/host-interface.md:
 * ss_client_* over the client node's NIC process). It sends each data node
 * its part from a kernel UDP socket (raid.h's packets), then polls the ack
 * words the data nodes' NICs put into this node's host memory; a data node
 * that stays silent for a try gets its part again under a new seq.
 *
 *   client CONTROL ECTX SEQ ADDR FILE IP2 IP3 IP4 IP5
 *
 * CONTROL: this node's control socket; ECTX: the name of its RMA ECTX;
 * SEQ: the first seq to use; ADDR: the store address; FILE: the write's
 * bytes (a multiple of 4); IPk: data node k's address. Prints one JSON
 * line: status per data node (RMA_STATUS_*; -1: no ack), next_seq,
 * retries, lat_ns. Exit status: 0 every data node acked OK, 1 one acked
 * an error (its parity update failed), 3 one never acked, 2 bad arguments
 * or setup.
 */
#define _POSIX_C_SOURCE 200809L
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
#include "raid.h"

#define NDATA UC_RAID_DATA_NODES
#define TRIES 6
#define TRY_NS 1000000000ull /* above the RMA transport's failure bound (~0.4 s): an error ack comes first */

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int fail(const char *what)
{
    fprintf(stderr, "raid client: %s\n", what);
    return 2;
}

/* Send one data node its part [data, data + n) as message `seq` (../uc.h's
 * header, then raid.h's address and up to UC_RAID_PER_PKT bytes a packet). */
static int send_part(int s, const struct sockaddr_in *to, uint32_t seq, uint32_t addr, const uint8_t *data,
                     uint32_t n)
{
    uint32_t npkt = (n + UC_RAID_PER_PKT - 1) / UC_RAID_PER_PKT, total = n + npkt * UC_RAID_ADDR_LEN;
    uint8_t pkt[UC_HDR + UC_CHUNK];
    for (uint32_t k = 0; k < npkt; k++) {
        uint32_t len = n - k * UC_RAID_PER_PKT < UC_RAID_PER_PKT ? n - k * UC_RAID_PER_PKT : UC_RAID_PER_PKT;
        uc_put_hdr(pkt, UC_MSG_BIT | (uint32_t)UC_RAID_CLIENT << 20 | (seq & 0xFFFFF), k + 1 == npkt ? UC_EOM : 0, seq,
                   total, k * UC_CHUNK, UC_RAID_CLIENT, UC_MODE_RAID_WRITE);
        uc_put32(pkt + UC_HDR, addr);
        memcpy(pkt + UC_HDR + UC_RAID_ADDR_LEN, data + k * UC_RAID_PER_PKT, len);
        if (sendto(s, pkt, UC_HDR + UC_RAID_ADDR_LEN + len, 0, (const struct sockaddr *)to, sizeof *to) < 0)
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 6 + NDATA)
        return fail("usage: client CONTROL ECTX SEQ ADDR FILE IP2 IP3 IP4 IP5");
    char *end;
    unsigned long long seq0 = strtoull(argv[3], &end, 0), addr = 0;
    if (*end || seq0 > UINT32_MAX)
        return fail("SEQ: a 32-bit number");
    addr = strtoull(argv[4], &end, 0);
    if (*end || addr > UC_RAID_STORE_SIZE)
        return fail("ADDR: a store address");
    FILE *f = fopen(argv[5], "rb");
    if (!f)
        return fail("FILE: cannot open it");
    static uint8_t data[UC_MAX_SIZE + 1];
    size_t size = fread(data, 1, sizeof data, f);
    fclose(f);
    uint32_t part = (uint32_t)(size / NDATA);
    if (size == 0 || size > UC_MAX_SIZE || size % NDATA || part > UC_RAID_STORE_SIZE - addr)
        return fail("FILE: 4 to 1 MiB bytes, a multiple of 4, whose parts fit the store at ADDR");
    struct sockaddr_in to[NDATA];
    for (int k = 0; k < NDATA; k++) {
        memset(&to[k], 0, sizeof to[k]);
        to[k].sin_family = AF_INET;
        to[k].sin_port = htons(UC_PORT);
        if (inet_pton(AF_INET, argv[6 + k], &to[k].sin_addr) != 1)
            return fail("IPk: an IPv4 address");
    }

    ss_client *c;
    uint8_t *mem;
    size_t len;
    ss_ectx e;
    uint64_t shm_off;
    if (ss_client_connect(argv[1], &c) != SS_OK || ss_client_host_mem(c, &mem, &len) != SS_OK ||
        ss_client_ectx(c, argv[2], &e, &shm_off) != SS_OK) {
        fprintf(stderr, "raid client: %s\n", ss_last_error());
        return 2;
    }
    if (shm_off > len || len - shm_off < UC_RAID_ACK + 8 * UC_RAID_RANKS)
        return fail("the ECTX's host window is not in the shared memory");
    /* The ack words: u64, little-endian, seq | status << 32 (raid/handler.c). */
    volatile uint8_t *acks = mem + shm_off + UC_RAID_ACK;
    int s = socket(AF_INET, SOCK_DGRAM, 0), buf = 8 << 20;
    if (s < 0)
        return fail("socket");
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);

    uint32_t seq = (uint32_t)seq0, first[NDATA], last[NDATA], retries = 0;
    int status[NDATA];
    for (int k = 0; k < NDATA; k++)
        status[k] = -1;
    uint64_t t0 = now_ns();
    for (int attempt = 0; attempt < TRIES; attempt++) {
        int pending = 0;
        for (int k = 0; k < NDATA; k++) {
            if (status[k] >= 0)
                continue;
            if (attempt == 0)
                first[k] = seq;
            last[k] = seq;
            if (send_part(s, &to[k], seq++, (uint32_t)addr, data + k * part, part) < 0) {
                fprintf(stderr, "raid client: sendto: %s\n", strerror(errno));
                return 2;
            }
            pending++;
        }
        if (!pending)
            break;
        retries += attempt > 0;
        uint64_t until = now_ns() + TRY_NS;
        while (pending && now_ns() < until)
            for (int k = 0; k < NDATA; k++) {
                if (status[k] >= 0)
                    continue;
                uint64_t w = 0;
                for (int i = 7; i >= 0; i--)
                    w = w << 8 | acks[8 * (UC_RAID_FIRST_DATA + k) + i];
                uint32_t ws = (uint32_t)w;
                if (ws >= first[k] && ws <= last[k]) { /* an ack of any try of this write */
                    status[k] = (int)(w >> 32);
                    pending--;
                }
            }
    }
    uint64_t lat = now_ns() - t0;
    int rc = 0;
    printf("{\"status\": [");
    for (int k = 0; k < NDATA; k++) {
        printf("%s%d", k ? ", " : "", status[k]);
        if (status[k] < 0)
            rc = 3;
        else if (status[k] > 0 && rc == 0)
            rc = 1;
    }
    printf("], \"next_seq\": %u, \"retries\": %u, \"lat_ns\": %llu}\n", seq, retries, (unsigned long long)lat);
    close(s);
    ss_client_close(c);
    return rc;
}
