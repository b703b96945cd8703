/* The UDP ping-pong client: one request in flight, the round-trip time of
 * each measured with CLOCK_MONOTONIC around send and receive. The same client
 * measures every server (softspin's echo handler, the kernel socket server).
 *
 *   udp_pingpong IP PORT COUNT [PAYLOAD_BYTES [SAMPLES_FILE]]
 *
 * Waits up to 5 s for a first answer (the server may still be attaching),
 * runs 100 unmeasured warm-up rounds, then COUNT measured ones. A reply that
 * does not come within 100 ms, or does not match the request byte for byte,
 * is counted as lost or wrong. Prints one JSON object; SAMPLES_FILE gets one
 * RTT in ns per line.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t pct(const uint64_t *s, long n, double p)
{
    long i = (long)(p / 100.0 * (double)(n - 1) + 0.5);
    return s[i];
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: udp_pingpong IP PORT COUNT [PAYLOAD_BYTES [SAMPLES_FILE]]\n");
        return 2;
    }
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons((int)arg_long("PORT", argv[2], 1, 65535))};
    if (inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1) {
        fprintf(stderr, "bad IP '%s'\n", argv[1]);
        return 2;
    }
    long count = arg_long("COUNT", argv[3], 1, 100000000);
    long size = argc > 4 ? arg_long("PAYLOAD_BYTES", argv[4], 1, 1472) : 32;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        die("socket");
    if (connect(fd, (struct sockaddr *)&dst, sizeof dst) < 0)
        die("connect");
    struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

    uint8_t req[1472], rep[2048];
    for (long i = 0; i < size; i++)
        req[i] = (uint8_t)(i * 7 + 1);
    /* Until the first answer: the server may still be starting. */
    uint64_t t_give_up = now_ns() + 5000000000ull;
    for (;;) {
        send(fd, req, (size_t)size, 0);
        if (recv(fd, rep, sizeof rep, 0) > 0)
            break;
        if (now_ns() > t_give_up) {
            fprintf(stderr, "udp_pingpong: no answer from %s:%s in 5 s\n", argv[1], argv[2]);
            printf("{\"count\": %ld, \"received\": 0, \"lost\": %ld}\n", count, count);
            return 1;
        }
    }
    uint64_t *rtt = malloc(sizeof(uint64_t) * (size_t)count);
    if (!rtt)
        die("malloc");
    long got = 0, lost = 0, wrong = 0;
    for (long i = -100; i < count; i++) {
        /* A sequence number in the first bytes tells a late reply apart. */
        uint32_t seq = (uint32_t)(i + 100);
        memcpy(req, &seq, size >= 4 ? 4 : (size_t)size);
        uint64_t t0 = now_ns();
        if (send(fd, req, (size_t)size, 0) != size)
            die("send");
        ssize_t r;
        for (;;) {
            r = recv(fd, rep, sizeof rep, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r >= 4 && size >= 4 && memcmp(rep, &seq, 4) != 0)
                continue; /* a straggler from an earlier timed-out round */
            break;
        }
        uint64_t t1 = now_ns();
        if (i < 0)
            continue;
        if (r < 0) {
            lost++;
            continue;
        }
        if (r != size || memcmp(rep, req, (size_t)size) != 0) {
            wrong++;
            continue;
        }
        rtt[got++] = t1 - t0;
    }
    if (argc > 5) {
        FILE *f = fopen(argv[5], "w");
        if (!f)
            die(argv[5]);
        for (long i = 0; i < got; i++)
            fprintf(f, "%llu\n", (unsigned long long)rtt[i]);
        fclose(f);
    }
    qsort(rtt, (size_t)got, sizeof *rtt, cmp_u64);
    printf("{\"count\": %ld, \"received\": %ld, \"lost\": %ld, \"wrong\": %ld, \"payload\": %ld", count, got, lost,
           wrong, size);
    if (got)
        printf(", \"min_ns\": %llu, \"p50_ns\": %llu, \"p90_ns\": %llu, \"p99_ns\": %llu, \"max_ns\": %llu",
               (unsigned long long)rtt[0], (unsigned long long)pct(rtt, got, 50),
               (unsigned long long)pct(rtt, got, 90), (unsigned long long)pct(rtt, got, 99),
               (unsigned long long)rtt[got - 1]);
    printf("}\n");
    return lost || wrong ? 1 : 0;
}
