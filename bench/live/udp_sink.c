/* The kernel receive baseline: a UDP socket that takes datagrams in batches
 * with recvmmsg and drops them. Counts what arrives in a fixed window that
 * starts at the first datagram.
 *
 *   udp_sink PORT SECONDS
 *
 * Prints one JSON object: packets in the window, its length, Mpps.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"

#define BATCH 64

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: udp_sink PORT SECONDS\n");
        return 2;
    }
    int port = (int)arg_long("PORT", argv[1], 1, 65535);
    long secs = arg_long("SECONDS", argv[2], 1, 3600);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        die("socket");
    int rcvbuf = 16 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
        die("bind");
    /* A timeout so a sender that stops early cannot hang the window. */
    struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

    static char bufs[BATCH][2048];
    struct iovec iov[BATCH];
    struct mmsghdr msgs[BATCH];
    for (int i = 0; i < BATCH; i++) {
        iov[i] = (struct iovec){.iov_base = bufs[i], .iov_len = sizeof bufs[i]};
        msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1}};
    }
    uint64_t t_start = 0, t_end = 0, n = 0, t_first_wait = now_ns() + 10000000000ull;
    for (;;) {
        int r = recvmmsg(fd, msgs, BATCH, 0, NULL);
        uint64_t t = now_ns();
        if (r > 0) {
            if (!t_start) {
                t_start = t;
                t_end = t + (uint64_t)secs * 1000000000ull;
                r = 0; /* the first batch opens the window */
            }
            n += (uint64_t)r;
        }
        if (t_start ? t >= t_end : t >= t_first_wait)
            break;
    }
    uint64_t t = now_ns();
    double w = t_start ? (double)(t - t_start) / 1e9 : 0;
    printf("{\"packets\": %llu, \"window_s\": %.6f, \"mpps\": %.6f, \"t_start_ns\": %llu, \"t_end_ns\": %llu}\n",
           (unsigned long long)n, w, w > 0 ? (double)n / w / 1e6 : 0.0, (unsigned long long)t_start,
           (unsigned long long)t);
    return n ? 0 : 1;
}
