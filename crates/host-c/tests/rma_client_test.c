/*
 * ss_client_put/get/fetch_add/cas/post/wait/test: a C host program on node 0
 * of a two-node cluster, run by crates/cli/tests/rma_cli.rs against node 1
 * (key 1 exported over its host memory). Usage: rma_client_test
 * CONTROL_SOCKET NODE1_SHM_FILE. Results are checked against node 1's shm
 * file, read here independently of the client.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
#define OK(call) CHECK((call) == SS_OK)

enum { KEY = 1, N = 9000, LOCAL = 800000, REMOTE = 800000, WORD = 900000 };

static const char *shm;
static uint8_t node1[1 << 20];

/* Node 1's host memory as its file holds it now. */
static void read_target(void) {
    FILE *f = fopen(shm, "rb");
    CHECK(f != NULL);
    if (f) {
        CHECK(fread(node1, 1, sizeof node1, f) == sizeof node1);
        fclose(f);
    }
}

static uint64_t word(size_t off, int width) {
    uint64_t v = 0;
    memcpy(&v, node1 + off, width); /* little-endian host, as the NIC's */
    return v;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s CONTROL_SOCKET NODE1_SHM_FILE\n", argv[0]);
        return 2;
    }
    shm = argv[2];
    ss_client *c;
    uint8_t *mem;
    size_t len;
    if (ss_client_connect(argv[1], &c) != SS_OK) {
        printf("FAIL connect: %s\n", ss_last_error());
        return 1;
    }
    OK(ss_client_host_mem(c, &mem, &len));
    CHECK(len >= LOCAL + 2 * N);

    /* put from the mapping, get back into it */
    for (int i = 0; i < N; i++) mem[LOCAL + i] = (uint8_t)(i * 7 + 3);
    OK(ss_client_put(c, 1, KEY, REMOTE, LOCAL, N));
    read_target();
    CHECK(memcmp(node1 + REMOTE, mem + LOCAL, N) == 0);
    memset(mem + LOCAL + N, 0, N);
    OK(ss_client_get(c, 1, KEY, REMOTE, LOCAL + N, N));
    CHECK(memcmp(mem + LOCAL + N, mem + LOCAL, N) == 0);

    /* atomics against the file's words */
    uint64_t old = 0;
    read_target();
    const uint64_t was64 = word(WORD, 8);
    OK(ss_client_fetch_add(c, 1, KEY, WORD, 8, 1000, &old));
    CHECK(old == was64);
    read_target();
    CHECK(word(WORD, 8) == was64 + 1000);
    uint64_t was = word(WORD + 8, 4);
    OK(ss_client_cas(c, 1, KEY, WORD + 8, 4, was, 0x12345678, &old));
    CHECK(old == was);
    read_target();
    CHECK(word(WORD + 8, 4) == 0x12345678);

    /* a wrong key: an error naming it, nothing written */
    static uint8_t before[1 << 20];
    memcpy(before, node1, sizeof node1);
    CHECK(ss_client_put(c, 1, 99, 0, LOCAL, 16) == SS_EHOST);
    CHECK(strstr(ss_last_error(), "BAD_KEY") != NULL);
    read_target();
    CHECK(memcmp(before, node1, sizeof node1) == 0);

    /* non-blocking: post, test, wait */
    ss_rma_request r;
    memset(&r, 0, sizeof r);
    r.op = SS_RMA_FETCH_ADD;
    r.rank = 1;
    r.width = 8;
    r.key = KEY;
    r.offset = WORD;
    r.operand = 5;
    uint64_t h = 0;
    OK(ss_client_post(c, &r, &h));
    ss_rma_completion done;
    int got = 0;
    OK(ss_client_test(c, h, &done, &got));
    if (!got) OK(ss_client_wait(c, h, 10000, &done, &got));
    CHECK(got == 1 && done.handle == h && done.status == 0 && done.value == was64 + 1000);
    /* taken once: the handle is no longer this client's */
    CHECK(ss_client_wait(c, h, 0, &done, &got) == SS_EINVAL);
    r.op = 9;
    CHECK(ss_client_post(c, &r, &h) == SS_EINVAL);
    CHECK(ss_client_post(c, NULL, &h) == SS_EINVAL);

    OK(ss_client_close(c));
    printf("rma_client_test: %d passed, %d failed\n", passed, failed);
    if (failed == 0) printf("rma_client_test: ok\n");
    return failed != 0;
}
