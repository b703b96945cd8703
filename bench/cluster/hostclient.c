/* The client of the host-CPU baseline (issue 27, item 6), against
 * hostserver: remote 8-byte read latency by pointer chasing, and put/get
 * goodput against message size and outstanding transactions (DiAD, seed
 * 003 §IV-B/C: its Figs. 4-5 and the multichase numbers).
 *
 *   hostclient HOST PORT [--region BYTES] [--seed S] [--chase N]
 *              [--sizes B,B,..] [--outstanding W,W,..] [--ops put,get]
 *              [--seconds T]
 *
 * 1. Fill: the client writes the whole region (BYTES, the server's size)
 *    from its own copy, the mirror: seeded pattern bytes, and at every
 *    64-byte line the little-endian offset of the next line of a random
 *    cyclic permutation (Sattolo's algorithm), so one chain visits every
 *    line in an order caches and prefetchers cannot guess (multichase's
 *    idea).
 * 2. Chase: N dependent reads of 8 bytes, each at the address the previous
 *    one returned, starting at 0; every value is checked against the
 *    mirror; the latency of each read (send to response) is recorded.
 * 3. Goodput: for each op, size S and outstanding count W: messages of S
 *    bytes, each split into requests of at most 1432 bytes (one per packet,
 *    as the NIC's), issued back to back with at most W requests in flight,
 *    for T seconds (at least one message); goodput = bytes of completed
 *    messages / time. A get's bytes are compared with the mirror; a put
 *    writes fresh seeded bytes into the mirror and sends them.
 * 4. Read-back: the whole region is read and compared with the mirror, so
 *    every put landed where it should.
 *
 * One transaction is one request packet; its id (txn) matches the response.
 * A response later than RTO_NS resends the request (counted); after
 * MAX_TRIES sends the client gives up naming the server (exit 3), so a dead
 * server never hangs it. Prints one JSON object; exit 0 when every value
 * matched, 1 on a mismatch or an error response, 2 on bad arguments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hostrma.h"

#define MAX_OUTSTANDING 64
#define MAX_LIST 32
#define STRIDE 64                      /* bytes between chain elements: a cache line */
#define RTO_NS (50ull * 1000 * 1000)   /* far above a veth round trip (~tens of µs) */
#define MAX_TRIES 20                   /* 1 s of silence: the server is gone */
#define FILL_OUTSTANDING 32

struct slot {
    int busy;
    uint32_t txn, op, len, tries;
    uint64_t off, sent_ns, msg;
    uint64_t value; /* a read's first 8 bytes, little-endian */
};

struct client {
    int fd;
    const char *server;
    uint8_t *mirror;
    uint64_t region;
    uint32_t next_txn;
    struct slot slots[MAX_OUTSTANDING];
    /* Totals, for the comparison with the server's own counts. */
    unsigned long requests, retransmits, write_bytes, read_bytes, stale, mismatches, errors;
};

static void send_req(struct client *c, struct slot *s)
{
    uint8_t pkt[HOSTRMA_PKT];
    hostrma_request(pkt, s->op, s->txn, s->off, s->len);
    size_t n = RMA_HDR_LEN;
    if (s->op == RMA_OP_WRITE) {
        memcpy(pkt + n, c->mirror + s->off, s->len);
        n += s->len;
        c->write_bytes += s->len;
    } else {
        c->read_bytes += s->len;
    }
    if (s->tries++)
        c->retransmits++;
    c->requests++;
    s->sent_ns = now_ns();
    /* ECONNREFUSED: an ICMP port unreachable from an earlier send (no
     * server yet or any more); the resend timer handles it like a loss. */
    if (send(c->fd, pkt, n, 0) < 0 && errno != ECONNREFUSED)
        die("send");
}

/* Start a request in a free slot (the caller checked there is one). */
static struct slot *issue(struct client *c, int w, uint32_t op, uint64_t off, uint32_t len, uint64_t msg)
{
    for (int i = 0; i < w; i++) {
        struct slot *s = &c->slots[i];
        if (!s->busy) {
            *s = (struct slot){.busy = 1, .txn = c->next_txn++, .op = op, .off = off, .len = len, .msg = msg};
            send_req(c, s);
            return s;
        }
    }
    fprintf(stderr, "hostclient: no free slot (bug)\n");
    exit(1);
}

/* A response for slot s: check it; 1 if it completes s. */
static int accept_response(struct client *c, struct slot *s, const uint8_t *p, size_t n)
{
    if (p[2] != (s->op | RMA_RESPONSE) || rma_get64(p + HDR(offset)) != s->off || rma_get32(p + HDR(length)) != s->len) {
        fprintf(stderr, "hostclient: response to txn %u does not echo its request\n", s->txn);
        c->errors++;
        return 1;
    }
    if (p[3] != RMA_STATUS_OK) {
        fprintf(stderr, "hostclient: %s:%" PRIu64 "+%u answered status %u\n", s->op == RMA_OP_READ ? "read" : "write",
                s->off, s->len, p[3]);
        c->errors++;
        return 1;
    }
    if (s->op == RMA_OP_READ) {
        if (n != RMA_HDR_LEN + s->len || memcmp(p + RMA_HDR_LEN, c->mirror + s->off, s->len) != 0) {
            c->mismatches++;
            fprintf(stderr, "hostclient: read %" PRIu64 "+%u returned other bytes than were written\n", s->off, s->len);
        }
        s->value = s->len >= 8 && n >= RMA_HDR_LEN + 8 ? get_le64(p + RMA_HDR_LEN) : 0;
    } else if (n != RMA_HDR_LEN) {
        c->errors++;
    }
    return 1;
}

/* Wait for one response (or resend what is late); the slot it completed,
 * or NULL when none did. */
static struct slot *progress(struct client *c, int w)
{
    uint64_t now = now_ns(), due = UINT64_MAX;
    for (int i = 0; i < w; i++) {
        struct slot *s = &c->slots[i];
        if (!s->busy)
            continue;
        if (now >= s->sent_ns + RTO_NS) {
            if (s->tries >= MAX_TRIES) {
                fprintf(stderr, "hostclient: no response from %s to txn %u after %u tries: server gone?\n", c->server,
                        s->txn, s->tries);
                exit(3);
            }
            send_req(c, s);
        }
        if (s->sent_ns + RTO_NS < due)
            due = s->sent_ns + RTO_NS;
    }
    if (due == UINT64_MAX)
        return NULL;
    struct pollfd pf = {.fd = c->fd, .events = POLLIN};
    uint64_t left = due > now ? due - now : 0;
    int r = poll(&pf, 1, (int)(left / 1000000 + 1));
    if (r < 0 && errno != EINTR)
        die("poll");
    if (r <= 0)
        return NULL;
    uint8_t pkt[HOSTRMA_PKT + 64];
    ssize_t n = recv(c->fd, pkt, sizeof pkt, MSG_DONTWAIT);
    if (n < 0) {
        if (errno == EAGAIN || errno == ECONNREFUSED || errno == EINTR)
            return NULL;
        die("recv");
    }
    if ((size_t)n < RMA_HDR_LEN || pkt[0] != RMA_VERSION || pkt[1] != RMA_KIND_DATA) {
        c->stale++;
        return NULL;
    }
    uint32_t txn = rma_get32(pkt + HDR(txn));
    for (int i = 0; i < w; i++) {
        struct slot *s = &c->slots[i];
        if (s->busy && s->txn == txn) {
            accept_response(c, s, pkt, (size_t)n);
            s->busy = 0;
            return s;
        }
    }
    c->stale++; /* the answer to a request already resent and answered */
    return NULL;
}

static int busy(const struct client *c, int w)
{
    int b = 0;
    for (int i = 0; i < w; i++)
        b += c->slots[i].busy;
    return b;
}

/* Fresh seeded bytes for a put's packet. */
static void fill_pattern(uint8_t *p, uint32_t len, uint64_t seed)
{
    for (uint32_t i = 0; i < len; i += 8) {
        uint8_t w[8];
        put_le64(w, splitmix64(&seed));
        memcpy(p + i, w, len - i < 8 ? len - i : 8);
    }
}

struct bw_result {
    unsigned long messages, packets, retransmits;
    uint64_t bytes, elapsed_ns;
};

/* Messages of `size` bytes for `seconds` (at least one), at most w
 * requests in flight (see the top comment). */
static struct bw_result run_bw(struct client *c, uint32_t op, uint64_t size, int w, double seconds, uint64_t seed)
{
    struct bw_result r = {0};
    unsigned long retx0 = c->retransmits;
    /* Requests still unanswered per message in flight: at most w messages
     * are, so a ring of w + 1 entries keyed by message number suffices. */
    uint64_t rem[MAX_OUTSTANDING + 1] = {0};
    uint64_t t0 = now_ns(), deadline = t0 + (uint64_t)(seconds * 1e9);
    uint64_t msg = 0, next = 0; /* message being issued, its next byte */
    int in_msg = 0;
    for (;;) {
        while (busy(c, w) < w) {
            if (!in_msg) {
                if (msg > 0 && now_ns() >= deadline)
                    break;
                in_msg = 1;
                next = 0;
                rem[msg % (uint64_t)(w + 1)] = (size + RMA_MAX_PAYLOAD - 1) / RMA_MAX_PAYLOAD;
            }
            uint64_t base = (msg * size) % c->region;
            if (base + size > c->region)
                base = 0;
            uint32_t len = size - next < RMA_MAX_PAYLOAD ? (uint32_t)(size - next) : RMA_MAX_PAYLOAD;
            if (op == RMA_OP_WRITE)
                fill_pattern(c->mirror + base + next, len, seed ^ (msg << 24) ^ next);
            issue(c, w, op, base + next, len, msg);
            r.packets++;
            next += len;
            if (next == size) {
                in_msg = 0;
                msg++;
            }
        }
        if (!busy(c, w))
            break;
        struct slot *s = progress(c, w);
        if (s && --rem[s->msg % (uint64_t)(w + 1)] == 0) {
            r.messages++;
            r.bytes += size;
        }
    }
    r.elapsed_ns = now_ns() - t0;
    r.retransmits = c->retransmits - retx0;
    return r;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted samples. */
static uint64_t pctl(const uint64_t *xs, size_t n, double p)
{
    return xs[(size_t)(p / 100.0 * (double)(n - 1) + 0.5)];
}

/* A comma-separated list of positive integers. */
static int parse_list(const char *name, char *s, long *out, long lo, long hi)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        if (n == MAX_LIST) {
            fprintf(stderr, "too many %s (at most %d)\n", name, MAX_LIST);
            exit(2);
        }
        out[n++] = arg_long(name, tok, lo, hi);
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: hostclient HOST PORT [--region BYTES] [--seed S] [--chase N] [--sizes B,..] "
                        "[--outstanding W,..] [--ops put,get] [--seconds T]\n");
        return 2;
    }
    struct client c = {.server = argv[1]};
    int port = (int)arg_long("PORT", argv[2], 1, 65535);
    long region = 16l << 20, seed = 1, chase = 0, sizes[MAX_LIST], outs[MAX_LIST];
    int nsizes = 0, nouts = 0, put = 0, get = 0;
    double seconds = 0.5;
    for (int i = 3; i < argc; i += 2) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "%s needs a value\n", k);
            return 2;
        }
        if (!strcmp(k, "--region"))
            region = arg_long("--region", v, 1 << 20, 1l << 32);
        else if (!strcmp(k, "--seed"))
            seed = arg_long("--seed", v, 0, 1l << 62);
        else if (!strcmp(k, "--chase"))
            chase = arg_long("--chase", v, 0, 100000000);
        else if (!strcmp(k, "--sizes"))
            nsizes = parse_list("--sizes", argv[i + 1], sizes, 1, 1l << 32);
        else if (!strcmp(k, "--outstanding"))
            nouts = parse_list("--outstanding", argv[i + 1], outs, 1, MAX_OUTSTANDING);
        else if (!strcmp(k, "--ops")) {
            put = strstr(v, "put") != NULL;
            get = strstr(v, "get") != NULL;
        } else if (!strcmp(k, "--seconds")) {
            char *end;
            seconds = strtod(v, &end);
            if (*end || !(seconds >= 0 && seconds <= 3600)) {
                fprintf(stderr, "bad --seconds '%s': must be in [0, 3600]\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "unknown option %s\n", k);
            return 2;
        }
    }
    /* (--region is at least 1 MiB: a put's packets in flight, at most
     * 64 x 1432 bytes, then never cover the same bytes twice.) */
    if (region % STRIDE) {
        fprintf(stderr, "--region must be a multiple of %d\n", STRIDE);
        return 2;
    }
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > region) {
            fprintf(stderr, "message size %ld is larger than the region (%ld)\n", sizes[i], region);
            return 2;
        }
    c.region = (uint64_t)region;

    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) {
        fprintf(stderr, "bad HOST '%s': an IPv4 address\n", argv[1]);
        return 2;
    }
    c.fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (c.fd < 0)
        die("socket");
    int buf = 4 << 20;
    setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(c.fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    if (connect(c.fd, (struct sockaddr *)&a, sizeof a) < 0)
        die("connect");

    /* 1. The mirror: pattern bytes, then the chain (Sattolo: one cycle). */
    c.mirror = malloc((size_t)region);
    uint64_t lines = (uint64_t)region / STRIDE, *perm = malloc(lines * sizeof *perm);
    if (!c.mirror || !perm)
        die("malloc");
    uint64_t g = (uint64_t)seed;
    fill_pattern(c.mirror, (uint32_t)region, splitmix64(&g));
    for (uint64_t i = 0; i < lines; i++)
        perm[i] = i;
    for (uint64_t i = lines - 1; i > 0; i--) {
        uint64_t j = splitmix64(&g) % i, t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (uint64_t i = 0; i < lines; i++)
        put_le64(c.mirror + i * STRIDE, perm[i] * STRIDE);
    free(perm);
    /* Into the server's region, FILL_OUTSTANDING writes in flight. */
    for (uint64_t off = 0; off < (uint64_t)region || busy(&c, FILL_OUTSTANDING);) {
        while (off < (uint64_t)region && busy(&c, FILL_OUTSTANDING) < FILL_OUTSTANDING) {
            uint32_t len = (uint64_t)region - off < RMA_MAX_PAYLOAD ? (uint32_t)((uint64_t)region - off) : RMA_MAX_PAYLOAD;
            issue(&c, FILL_OUTSTANDING, RMA_OP_WRITE, off, len, 0);
            off += len;
        }
        progress(&c, FILL_OUTSTANDING);
    }

    printf("{\"region\": %ld, \"seed\": %ld, \"stride\": %d", region, seed, STRIDE);

    /* 2. The chase. */
    if (chase > 0) {
        uint64_t *lat = malloc((size_t)chase * sizeof *lat), cur = 0, verified = 0, retried = 0, sum = 0;
        size_t n = 0;
        if (!lat)
            die("malloc");
        for (long i = 0; i < chase; i++) {
            uint64_t t0 = now_ns();
            struct slot *s = issue(&c, 1, RMA_OP_READ, cur, 8, 0), *done = NULL;
            while (!(done = progress(&c, 1)))
                ;
            uint64_t t1 = now_ns();
            uint64_t want = get_le64(c.mirror + cur);
            if (done->value != want) {
                fprintf(stderr, "hostclient: chase read %ld at %" PRIu64 ": got %" PRIu64 ", the chain says %" PRIu64 "\n",
                        i, cur, done->value, want);
                c.mismatches++;
                break;
            }
            verified++;
            /* A read that was resent waited for the timer: not a latency. */
            if (s->tries == 1) {
                lat[n++] = t1 - t0;
                sum += t1 - t0;
            } else {
                retried++;
            }
            cur = done->value;
        }
        printf(", \"chase\": {\"count\": %ld, \"verified\": %" PRIu64 ", \"retried\": %" PRIu64 ", \"lines\": %" PRIu64,
               chase, verified, retried, lines);
        if (n) {
            qsort(lat, n, sizeof *lat, cmp_u64);
            printf(", \"samples\": %zu, \"lat_ns\": {\"min\": %" PRIu64 ", \"p1\": %" PRIu64 ", \"p5\": %" PRIu64
                   ", \"p25\": %" PRIu64 ", \"p50\": %" PRIu64 ", \"p75\": %" PRIu64 ", \"p95\": %" PRIu64
                   ", \"p99\": %" PRIu64 ", \"max\": %" PRIu64 ", \"mean\": %.1f}",
                   n, lat[0], pctl(lat, n, 1), pctl(lat, n, 5), pctl(lat, n, 25), pctl(lat, n, 50), pctl(lat, n, 75),
                   pctl(lat, n, 95), pctl(lat, n, 99), lat[n - 1], (double)sum / (double)n);
        }
        printf("}");
        free(lat);
    }

    /* 3. Goodput: gets first (they read the filled region), then puts. */
    printf(", \"bw\": [");
    int first = 1;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t op = pass == 0 ? RMA_OP_READ : RMA_OP_WRITE;
        if (!(pass == 0 ? get : put))
            continue;
        for (int i = 0; i < nsizes; i++)
            for (int j = 0; j < nouts; j++) {
                struct bw_result r =
                    run_bw(&c, op, (uint64_t)sizes[i], (int)outs[j], seconds, (uint64_t)seed * 1000003u + (uint64_t)(i * 64 + j));
                double s = (double)r.elapsed_ns / 1e9;
                printf("%s\n {\"op\": \"%s\", \"size\": %ld, \"outstanding\": %ld, \"messages\": %lu, \"packets\": %lu, "
                       "\"bytes\": %" PRIu64 ", \"elapsed_s\": %.6f, \"goodput_gbps\": %.6f, \"retransmits\": %lu}",
                       first ? "" : ",", pass == 0 ? "get" : "put", sizes[i], outs[j], r.messages, r.packets, r.bytes, s,
                       (double)r.bytes * 8 / s / 1e9, r.retransmits);
                first = 0;
                fflush(stdout);
            }
    }
    printf("]");

    /* 4. Read the whole region back against the mirror. */
    unsigned long mism0 = c.mismatches;
    run_bw(&c, RMA_OP_READ, (uint64_t)region, FILL_OUTSTANDING, 0, 0);
    printf(", \"readback\": {\"bytes\": %ld, \"mismatched_packets\": %lu}", region, c.mismatches - mism0);
    printf(", \"requests\": %lu, \"retransmits\": %lu, \"write_bytes_sent\": %lu, \"read_bytes_requested\": %lu, "
           "\"stale_responses\": %lu, \"mismatches\": %lu, \"errors\": %lu}\n",
           c.requests, c.retransmits, c.write_bytes, c.read_bytes, c.stale, c.mismatches, c.errors);
    free(c.mirror);
    return c.mismatches || c.errors ? 1 : 0;
}
