/* Kernel TCP goodput between two cluster nodes (issue 27, item 6): the
 * baseline beside the RMA put/get goodput, same namespaces, same veth
 * path. A stream has no transactions in flight, so only the message size
 * varies: the sender writes messages of SIZE bytes back to back (one
 * send() loop each, Nagle on, as an application would), the receiver
 * counts and checks every byte.
 *
 *   tcpgoodput recv PORT [SECONDS]
 *       serves one connection after another; on SIGTERM/SIGINT (or after
 *       SECONDS, a guard) prints one JSON line with its totals, exit 0.
 *   tcpgoodput send HOST PORT SECONDS SEED SIZE...
 *       one connection per SIZE, each for SECONDS (at least one message);
 *       prints a JSON array. Exit 0 when the receiver got exactly the bytes
 *       sent and every byte matched, 1 otherwise.
 *
 * The stream: a 16-byte preamble (SIZE, SEED; little-endian), then
 * messages; every message is the same SIZE seeded bytes, so the receiver
 * checks byte i of the stream against byte i % SIZE of its own copy. After
 * the sender shuts its side down, the receiver answers 24 bytes: bytes
 * received, bytes that differed, its elapsed ns from the first message byte
 * to the end of the stream.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hostrma.h"

#define CHUNK (256u << 10)
#define MAX_SIZE (16ull << 20)

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

/* The SIZE seeded bytes every message repeats. */
static uint8_t *message(uint64_t size, uint64_t seed)
{
    uint8_t *m = malloc(size + 8);
    if (!m)
        die("malloc");
    for (uint64_t i = 0; i < size; i += 8)
        put_le64(m + i, splitmix64(&seed));
    return m;
}

/* Exactly n bytes, or -1 (EOF or error). */
static int read_full(int fd, uint8_t *p, size_t n)
{
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r <= 0) {
            if (r < 0 && errno == EINTR && !stop)
                continue;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t r = write(fd, p, n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int recv_main(int argc, char **argv)
{
    int port = (int)arg_long("PORT", argv[2], 1, 65535);
    long secs = argc > 3 ? arg_long("SECONDS", argv[3], 0, 86400) : 0;
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (ls < 0)
        die("socket");
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 4) < 0)
        die("bind/listen");
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGALRM, &sa, NULL);
    if (secs)
        alarm((unsigned)secs);
    printf("listening\n");
    fflush(stdout);
    unsigned long conns = 0, bad = 0;
    uint64_t total = 0, differing = 0;
    uint8_t *buf = malloc(CHUNK);
    if (!buf)
        die("malloc");
    while (!stop) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            die("accept");
        }
        uint8_t pre[16];
        uint64_t size, seed;
        if (read_full(fd, pre, 16) || (size = get_le64(pre)) == 0 || size > MAX_SIZE) {
            bad++;
            close(fd);
            continue;
        }
        seed = get_le64(pre + 8);
        uint8_t *m = message(size, seed);
        uint64_t got = 0, diff = 0, t0 = 0;
        for (;;) {
            ssize_t r = read(fd, buf, CHUNK);
            if (r < 0 && errno == EINTR && !stop)
                continue;
            if (r <= 0)
                break;
            if (!got)
                t0 = now_ns();
            /* Compare against the message, wrapping at its end. */
            for (size_t i = 0; i < (size_t)r;) {
                uint64_t at = (got + i) % size;
                size_t n = (size_t)(size - at) < (size_t)r - i ? (size_t)(size - at) : (size_t)r - i;
                if (memcmp(buf + i, m + at, n) != 0)
                    for (size_t j = 0; j < n; j++)
                        diff += buf[i + j] != m[at + j];
                i += n;
            }
            got += (uint64_t)r;
        }
        uint64_t el = got ? now_ns() - t0 : 0;
        uint8_t ans[24];
        put_le64(ans, got);
        put_le64(ans + 8, diff);
        put_le64(ans + 16, el);
        write_full(fd, ans, sizeof ans);
        close(fd);
        free(m);
        conns++;
        total += got;
        differing += diff;
    }
    printf("{\"connections\": %lu, \"bytes\": %" PRIu64 ", \"differing\": %" PRIu64 ", \"bad_preambles\": %lu}\n", conns,
           total, differing, bad);
    free(buf);
    return 0;
}

static int send_main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: tcpgoodput send HOST PORT SECONDS SEED SIZE...\n");
        return 2;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)arg_long("PORT", argv[3], 1, 65535))};
    if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1) {
        fprintf(stderr, "bad HOST '%s': an IPv4 address\n", argv[2]);
        return 2;
    }
    char *end;
    double secs = strtod(argv[4], &end);
    if (*end || !(secs >= 0 && secs <= 3600)) {
        fprintf(stderr, "bad SECONDS '%s': must be in [0, 3600]\n", argv[4]);
        return 2;
    }
    uint64_t seed = (uint64_t)arg_long("SEED", argv[5], 0, 1l << 62);
    int ok = 1;
    printf("[");
    for (int k = 6; k < argc; k++) {
        uint64_t size = (uint64_t)arg_long("SIZE", argv[k], 8, (long)MAX_SIZE);
        uint8_t *m = message(size, seed + (uint64_t)k);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            die("socket");
        if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
            die("connect");
        uint8_t pre[16], ans[24];
        put_le64(pre, size);
        put_le64(pre + 8, seed + (uint64_t)k);
        uint64_t t0 = now_ns(), deadline = t0 + (uint64_t)(secs * 1e9), sent = 0, msgs = 0;
        if (write_full(fd, pre, 16))
            die("write");
        do {
            if (write_full(fd, m, size))
                die("write");
            sent += size;
            msgs++;
        } while (now_ns() < deadline);
        shutdown(fd, SHUT_WR);
        if (read_full(fd, ans, sizeof ans))
            die("read (the receiver's answer)");
        uint64_t el = now_ns() - t0, got = get_le64(ans), diff = get_le64(ans + 8);
        close(fd);
        free(m);
        ok &= got == sent && diff == 0;
        printf("%s\n {\"size\": %" PRIu64 ", \"messages\": %" PRIu64 ", \"bytes_sent\": %" PRIu64
               ", \"bytes_received\": %" PRIu64 ", \"differing\": %" PRIu64 ", \"elapsed_s\": %.6f, "
               "\"receiver_elapsed_s\": %.6f, \"goodput_gbps\": %.6f}",
               k == 6 ? "" : ",", size, msgs, sent, got, diff, (double)el / 1e9, (double)get_le64(ans + 16) / 1e9,
               (double)got * 8 / ((double)el / 1e9) / 1e9);
        fflush(stdout);
    }
    printf("]\n");
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "recv"))
        return recv_main(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "send"))
        return send_main(argc, argv);
    fprintf(stderr, "usage: tcpgoodput recv PORT [SECONDS] | send HOST PORT SECONDS SEED SIZE...\n");
    return 2;
}
