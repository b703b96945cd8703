/*
 * ss_client_*: a C host program beside a `softspin nic` process
 * (docs/host-interface.md), run by tests/client.rs with the NIC serving
 * examples/rma_target on lo. Usage: client_test CONTROL_SOCKET UDP_PORT ECTX_NAME.
 * RMA requests are encoded here from docs/rma.md's field table; the bytes
 * served and written are checked against the program's own pattern.
 */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <softspin.h>

static int failed, passed;

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (cond) {                                                                         \
            passed++;                                                                       \
        } else {                                                                            \
            failed++;                                                                       \
            printf("FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond,         \
                   ss_last_error());                                                        \
        }                                                                                   \
    } while (0)
#define EXPECT(call, want) CHECK((call) == (want))
#define OK(call) EXPECT(call, SS_OK)

enum { HDR = 40, WRITE = 1, READ = 2 };

static void put32(uint8_t *p, uint32_t v) { v = htonl(v); memcpy(p, &v, 4); }

/* One RMA request; returns the response's status, its data in `data`. */
static int rma(int s, const struct sockaddr_in *to, uint8_t op, uint32_t txn, uint32_t key, uint64_t off,
               uint32_t len, const uint8_t *payload, uint8_t *data)
{
    uint8_t b[HDR + 1500] = {1, 0, op, 0, 0, 3, 0, 0};
    put32(b + 16, txn);
    put32(b + 20, key);
    put32(b + 24, (uint32_t)(off >> 32));
    put32(b + 28, (uint32_t)off);
    put32(b + 32, len);
    size_t n = HDR + (payload ? len : 0);
    if (payload)
        memcpy(b + HDR, payload, len);
    if (sendto(s, b, n, 0, (const struct sockaddr *)to, sizeof *to) != (ssize_t)n)
        return -1;
    uint8_t r[2048];
    ssize_t got = recv(s, r, sizeof r, 0);
    if (got < HDR || r[2] != (op | 0x80) || memcmp(r + 16, b + 16, 4) != 0)
        return -1;
    if (data)
        memcpy(data, r + HDR, (size_t)got - HDR);
    return r[3];
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s CONTROL_SOCKET UDP_PORT ECTX_NAME\n", argv[0]);
        return 2;
    }
    ss_client *c = NULL;
    EXPECT(ss_client_connect("/nonexistent/nic.sock", &c), SS_EIO);
    EXPECT(ss_client_connect(NULL, &c), SS_EINVAL);
    OK(ss_client_connect(argv[1], &c));
    if (!c)
        return 1;
    uint8_t *mem = NULL;
    size_t len = 0;
    OK(ss_client_host_mem(c, &mem, &len));
    CHECK(mem != NULL && len == 65536);
    ss_ectx e = 0, none = 0;
    uint64_t shm_off = 1;
    OK(ss_client_ectx(c, argv[3], &e, &shm_off));
    CHECK(shm_off == 0);
    EXPECT(ss_client_ectx(c, "no-such-ectx", &none, NULL), SS_EINVAL);

    OK(ss_client_export_window(c, e, 2, 4096, 4096, 3));
    EXPECT(ss_client_export_window(c, e, 3, 65000, 4096, 3), SS_EINVAL);
    CHECK(strstr(ss_last_error(), "passes the end") != NULL);
    for (size_t i = 0; i < len; i++)
        mem[i] = (uint8_t)(i * 7 + 3);

    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct timeval tv = {5, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    uint8_t data[1500];
    /* The NIC reads what this program stored, in place. */
    EXPECT(rma(s, &to, READ, 1, 2, 100, 64, NULL, data), 0);
    CHECK(memcmp(data, mem + 4096 + 100, 64) == 0);
    /* What the NIC writes is in this program's memory. */
    uint8_t payload[16];
    for (int i = 0; i < 16; i++)
        payload[i] = (uint8_t)(0xa0 + i);
    EXPECT(rma(s, &to, WRITE, 2, 2, 200, 16, payload, NULL), 0);
    CHECK(memcmp(mem + 4096 + 200, payload, 16) == 0);
    CHECK(mem[4096 + 199] == (uint8_t)((4096 + 199) * 7 + 3) && mem[4096 + 216] == (uint8_t)((4096 + 216) * 7 + 3));
    close(s);

    ss_counter ctr[4];
    size_t n = 0;
    OK(ss_client_counters(c, e, ctr, 4, &n));
    CHECK(n == 1 && ctr[0].index == 0 && ctr[0].count == 2 && ctr[0].sum == 64 + 16);
    EXPECT(ss_client_counters(c, e, NULL, 4, &n), SS_EINVAL);
    char status[4096];
    size_t slen = 0;
    OK(ss_client_status(c, status, sizeof status, &slen));
    CHECK(slen < sizeof status && strstr(status, "\"packets\":2,") != NULL);
    ss_notification note;
    int got = 7;
    OK(ss_client_wait_notification(c, 10, &note, &got));
    CHECK(got == 0);
    EXPECT(ss_client_respond(c, 999, 1), SS_EINVAL);
    OK(ss_client_unexport_window(c, e, 2));
    EXPECT(ss_client_unexport_window(c, e, 2), SS_EINVAL);
    OK(ss_client_close(c));
    OK(ss_client_close(NULL));
    EXPECT(ss_client_status(NULL, status, sizeof status, &slen), SS_EINVAL);
    printf("client_test: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
