/* The host-CPU baseline of remote memory (issue 27, item 6): a plain
 * blocking UDP server whose CPU does what a NIC serving an RMA window does
 * by DMA (DiAD's remote host memory, seed 003 §IV-C): it holds a region of
 * memory and answers RMA read and write requests on it (hostrma.h says
 * which part of the wire format it speaks).
 *
 *   hostserver PORT BYTES [--seconds S] [--busy-poll] [--sabotage N]
 *
 * Prints "listening" on stdout once bound; on SIGTERM or SIGINT, or after
 * S seconds (0 or absent: no limit; a guard against being left behind), one
 * JSON line with what it served, then exits 0. Requests it cannot serve get
 * the error response the NIC's handlers give (docs/rma.md "Status codes";
 * atomics get PERMISSION: the region is a read-write window) and are
 * counted; datagrams that are not RMA requests are counted and
 * dropped. Exit 1 on a socket error, 2 on bad arguments.
 *
 * --busy-poll spins on a non-blocking socket instead of sleeping in
 * recvfrom: a blocked server on this VM pays tens of microseconds to be
 * woken (docs/live.md "Round-trip time"), which `softspin nic` avoids by
 * polling while a conversation is active; a polling server is the fair
 * opponent, the blocking one the usual program.
 *
 * --sabotage N > 0 flips a bit in every Nth read's data: the benchmark's
 * check runs it to prove that the client's verification catches a wrong
 * byte.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hostrma.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

struct counts {
    unsigned long reads, writes, read_bytes, write_bytes, ignored;
    unsigned long status[RMA_STATUS_FAILED + 1];
};

/* Serve one request in place: `p` (n bytes) becomes the response; returns
 * its length, or 0 to drop the datagram. */
static size_t serve(uint8_t *p, size_t n, uint8_t *mem, uint64_t size, struct counts *c, long sabotage)
{
    if (n < RMA_HDR_LEN || p[0] != RMA_VERSION || p[1] != RMA_KIND_DATA || (p[2] & RMA_RESPONSE)) {
        c->ignored++;
        return 0;
    }
    uint32_t op = p[2], key = rma_get32(p + HDR(key)), len = rma_get32(p + HDR(length));
    uint64_t off = rma_get64(p + HDR(offset));
    size_t payload = n - RMA_HDR_LEN;
    uint32_t st = RMA_STATUS_OK;
    if (rma_op_width(op) && p[3] == 0)
        st = RMA_STATUS_PERMISSION; /* a window for reads and writes only */
    else if (p[3] != 0 || (op != RMA_OP_WRITE && op != RMA_OP_READ) || len > RMA_MAX_PAYLOAD ||
             payload != (op == RMA_OP_WRITE ? len : 0))
        st = RMA_STATUS_MALFORMED;
    else if (key != HOSTRMA_KEY)
        st = RMA_STATUS_BAD_KEY;
    else if (off > size || len > size - off) /* no overflow: off <= size first */
        st = RMA_STATUS_OUT_OF_WINDOW;
    c->status[st]++;
    /* The response: the request's header with the op marked, the status
     * set and the ranks swapped (as the NIC's target handler answers). */
    uint8_t src[2] = {p[HDR(src_rank)], p[HDR(src_rank) + 1]};
    memcpy(p + HDR(src_rank), p + HDR(dst_rank), 2);
    memcpy(p + HDR(dst_rank), src, 2);
    p[2] = (uint8_t)(op | RMA_RESPONSE);
    p[3] = (uint8_t)st;
    if (st != RMA_STATUS_OK)
        return RMA_HDR_LEN;
    if (op == RMA_OP_WRITE) {
        memcpy(mem + off, p + RMA_HDR_LEN, len);
        c->writes++;
        c->write_bytes += len;
        return RMA_HDR_LEN;
    }
    memcpy(p + RMA_HDR_LEN, mem + off, len);
    c->reads++;
    if (sabotage && len && c->reads % (unsigned long)sabotage == 0)
        p[RMA_HDR_LEN + len - 1] ^= 1;
    c->read_bytes += len;
    return RMA_HDR_LEN + len;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: hostserver PORT BYTES [--seconds S] [--busy-poll] [--sabotage N]\n");
        return 2;
    }
    int port = (int)arg_long("PORT", argv[1], 1, 65535);
    uint64_t size = (uint64_t)arg_long("BYTES", argv[2], 8, 1l << 32);
    long secs = 0, sabotage = 0;
    int poll_mode = 0;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--busy-poll"))
            poll_mode = 1;
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            secs = arg_long("--seconds", argv[++i], 0, 86400);
        else if (!strcmp(argv[i], "--sabotage") && i + 1 < argc)
            sabotage = arg_long("--sabotage", argv[++i], 0, 1l << 30);
        else {
            fprintf(stderr, "hostserver: unknown option or missing value: %s\n", argv[i]);
            return 2;
        }
    }
    /* calloc's pages are touched by the first write; the client fills the
     * region before it measures, so no page fault lands in a sample. */
    uint8_t *mem = calloc(1, size);
    if (!mem)
        die("calloc");
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        die("socket");
    /* Room for 64 outstanding requests of the largest size, and more. */
    int buf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
        die("bind");
    /* Without SA_RESTART a signal interrupts recvfrom, so the loop sees it. */
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGALRM, &sa, NULL);
    if (secs)
        alarm((unsigned)secs);
    printf("listening\n");
    fflush(stdout);
    struct counts c = {0};
    uint8_t pkt[65536];
    while (!stop) {
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        ssize_t r = recvfrom(fd, pkt, sizeof pkt, poll_mode ? MSG_DONTWAIT : 0, (struct sockaddr *)&from, &fl);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            die("recvfrom");
        }
        size_t out = serve(pkt, (size_t)r, mem, size, &c, sabotage);
        if (out && sendto(fd, pkt, out, 0, (struct sockaddr *)&from, fl) < 0)
            die("sendto");
    }
    printf("{\"reads\": %lu, \"writes\": %lu, \"read_bytes\": %lu, \"write_bytes\": %lu, \"ignored\": %lu, "
           "\"ok\": %lu, \"bad_key\": %lu, \"out_of_window\": %lu, \"permission\": %lu, \"malformed\": %lu}\n",
           c.reads, c.writes, c.read_bytes, c.write_bytes, c.ignored, c.status[RMA_STATUS_OK],
           c.status[RMA_STATUS_BAD_KEY], c.status[RMA_STATUS_OUT_OF_WINDOW], c.status[RMA_STATUS_PERMISSION],
           c.status[RMA_STATUS_MALFORMED]);
    free(mem);
    return 0;
}
