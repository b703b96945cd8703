/*
 * The matching use case's host API in C (the Python one is mtapi.py; both
 * speak matching.h's protocol with the NIC's handlers, handler.c): an
 * endpoint over a node's shared host memory (ss_client_*) and a UDP socket,
 * mt_irecv / mt_isend with completion, and a run of the five cases of seed
 * 004's Fig. 5b between node FROM (sender) and node TO (receiver): eager
 * posted, eager unexpected, rendezvous posted, rendezvous unexpected, each
 * checked byte for byte, with wildcard source and tag, and a receive too
 * small for its message, which must fail with "truncated".
 *
 *   host FROM_SOCK TO_SOCK FROM TO TO_IP NODES [--sabotage]
 *
 * Runs in node FROM's namespace (softspin cluster exec); prints one JSON
 * line; exit status 0 only if every case verified.
 */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
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
#include "matching.h"

#define ECTX_NAME "usecase" /* the use cases' ECTX (common.rules_toml) */
#define TIMEOUT_MS 5000

typedef struct {
    ss_client *c;
    uint8_t *mem; /* the ECTX's host window */
    uint32_t rank, nodes, posted, seq, recv_at, send_at;
    uint64_t cookie;
} mt_ep;

typedef struct {
    mt_ep *ep;
    uint32_t id, cap;
    uint8_t *buf;
} mt_recv;

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static int ep_open(mt_ep *ep, const char *sock, uint32_t rank, uint32_t nodes)
{
    uint8_t *all;
    size_t len;
    ss_ectx e;
    uint64_t off;
    memset(ep, 0, sizeof *ep);
    if (ss_client_connect(sock, &ep->c) != SS_OK || ss_client_host_mem(ep->c, &all, &len) != SS_OK ||
        ss_client_ectx(ep->c, ECTX_NAME, &e, &off) != SS_OK || off + UC_MT_END > len) {
        fprintf(stderr, "host: %s: %s\n", sock, ss_last_error());
        return -1;
    }
    ep->mem = all + off;
    ep->rank = rank;
    ep->nodes = nodes;
    /* Go on from where earlier programs on this node left the ring and FINs. */
    ep->posted = __atomic_load_n((uint32_t *)(ep->mem + UC_MT_POSTED), __ATOMIC_ACQUIRE);
    for (uint32_t k = 0; k < UC_MT_SENDS; k++) {
        uint64_t f;
        memcpy(&f, ep->mem + UC_MT_FINS + 8 * k, 8);
        if (f > ep->cookie)
            ep->cookie = f;
    }
    ep->seq = (uint32_t)ep->cookie + 0x8000; /* message ids apart from the Python senders' */
    return 0;
}

static uint8_t *ep_buffer(mt_ep *ep, uint32_t n)
{
    if (ep->recv_at + n > UC_MT_SEND - UC_MT_RECV)
        ep->recv_at = 0;
    uint8_t *b = ep->mem + UC_MT_RECV + ep->recv_at;
    ep->recv_at += (n + 63) & ~63u;
    return b;
}

/* Post a receive into the ring, then ring the NIC's doorbell (an RMA
 * fetch-and-add of 0 on a peer: the control socket's way to reach it). */
static int mt_irecv(mt_ep *ep, uint32_t src, uint32_t tag, uint8_t *buf, uint32_t cap, mt_recv *r)
{
    uint32_t id = ep->posted;
    uint32_t entry[5] = {id, src, tag, (uint32_t)(buf - ep->mem), cap};
    memcpy(ep->mem + UC_MT_POST + (id % UC_MT_POSTS) * UC_MT_POST_LEN, entry, sizeof entry);
    __atomic_store_n((uint32_t *)(ep->mem + UC_MT_POSTED), ++ep->posted, __ATOMIC_RELEASE);
    ss_rma_request k = {.op = SS_RMA_FETCH_ADD, .rank = (uint16_t)((ep->rank + 1) % ep->nodes), .width = 8,
                        .key = UC_KEY, .offset = UC_MT_KICK, .operand = 0};
    uint64_t h;
    if (ss_client_post(ep->c, &k, &h) != SS_OK) {
        fprintf(stderr, "host: doorbell: %s\n", ss_last_error());
        return -1;
    }
    *r = (mt_recv){ep, id, cap, buf};
    return 0;
}

/* Wait for a receive: 0 and its length, source, tag and how it matched, or
 * the NIC's status (UC_MT_*), or -1 after the timeout. */
static int mt_wait(mt_recv *r, uint32_t *len, uint32_t *src, uint32_t *tag, uint32_t *how)
{
    uint8_t *rec = r->ep->mem + UC_MT_COMPL + (r->id % UC_MT_POSTS) * UC_MT_COMPL_LEN;
    uint64_t end = now_ms() + TIMEOUT_MS;
    while (__atomic_load_n((uint32_t *)(rec + UC_MT_DONE_OFF), __ATOMIC_ACQUIRE) != r->id + 1)
        if (now_ms() > end)
            return -1;
    uint32_t f[7];
    memcpy(f, rec, sizeof f);
    if (f[4] != UC_MT_NO_SLOT) { /* unexpected eager: copy out, then free the slot */
        if (f[0] == UC_MT_OK)
            memcpy(r->buf, r->ep->mem + UC_MT_UNEXP + f[4] * UC_MT_EAGER_MAX, f[1]);
        __atomic_store_n((uint32_t *)(r->ep->mem + UC_MT_ACKS + 4 * f[4]), f[5], __ATOMIC_RELEASE);
    }
    *len = f[1];
    *src = f[2];
    *tag = f[3];
    *how = f[6];
    return (int)f[0];
}

/* Send: eager in one datagram, else rendezvous (the data exposed in our
 * send area, a header naming it). Returns the cookie to wait for (0: eager). */
static uint64_t mt_isend(mt_ep *ep, int s, const struct sockaddr_in *to, uint32_t tag, const uint8_t *data,
                         uint32_t n)
{
    uint8_t pkt[UC_HDR + UC_MT_EAGER_MAX];
    uint32_t seq = ++ep->seq, msg = UC_MSG_BIT | (ep->rank << 20) | (seq & 0xfffff);
    uint32_t mode = n <= UC_MT_EAGER_MAX ? UC_MODE_EAGER : UC_MODE_RNDV, body = n, cookie = 0;
    if (mode == UC_MODE_RNDV) {
        if (ep->send_at + n > UC_MT_END - UC_MT_SEND)
            ep->send_at = 0;
        uint32_t soff = UC_MT_SEND + ep->send_at;
        ep->send_at += (n + 63) & ~63u;
        memcpy(ep->mem + soff, data, n);
        cookie = (uint32_t)++ep->cookie;
        uc_put32(pkt + UC_HDR, soff);
        uc_put32(pkt + UC_HDR + 4, cookie);
        body = UC_MT_RTS_LEN;
    } else {
        memcpy(pkt + UC_HDR, data, n);
    }
    uc_put_hdr(pkt, msg, UC_EOM | (tag << UC_MT_TAG_SHIFT), seq, n, 0, ep->rank, mode);
    sendto(s, pkt, UC_HDR + body, 0, (const struct sockaddr *)to, sizeof *to);
    return cookie;
}

static int mt_send_wait(mt_ep *ep, uint64_t cookie)
{
    uint64_t end = now_ms() + TIMEOUT_MS;
    while (cookie && __atomic_load_n((uint64_t *)(ep->mem + UC_MT_FINS + 8 * (cookie % UC_MT_SENDS)),
                                     __ATOMIC_ACQUIRE) != cookie)
        if (now_ms() > end)
            return -1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: host FROM_SOCK TO_SOCK FROM TO TO_IP NODES [--sabotage]\n");
        return 2;
    }
    uint32_t from = (uint32_t)atoi(argv[3]), to = (uint32_t)atoi(argv[4]), nodes = (uint32_t)atoi(argv[6]);
    int sabotage = argc > 7 && !strcmp(argv[7], "--sabotage");
    mt_ep snd, rcv;
    if (ep_open(&snd, argv[1], from, nodes) || ep_open(&rcv, argv[2], to, nodes))
        return 1;
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(UC_PORT)};
    if (s < 0 || inet_pton(AF_INET, argv[5], &dst.sin_addr) != 1) {
        fprintf(stderr, "host: socket or address %s\n", argv[5]);
        return 1;
    }
    /* size, tag, receive's source and tag, posted first?, capacity */
    struct {
        uint32_t size, tag, src, rtag, posted, cap, want_status;
    } cases[] = {
        {300, 11, from, 11, 1, 300, UC_MT_OK},
        {1000, 12, UC_MT_ANY, 12, 0, 1000, UC_MT_OK},
        {20000, 13, from, UC_MT_ANY, 1, 20000, UC_MT_OK},
        {70000, 14, UC_MT_ANY, UC_MT_ANY, 0, 70000, UC_MT_OK},
        {200, 15, from, 15, 1, 100, UC_MT_TRUNCATED},
    };
    static uint8_t data[70000];
    int ok = 1, n = 0;
    char errs[1024] = "";
    srand(from * 7919 + to);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++, n++) {
        uint32_t size = cases[i].size;
        for (uint32_t k = 0; k < size; k++)
            data[k] = (uint8_t)rand();
        uint8_t *buf = ep_buffer(&rcv, cases[i].cap);
        memset(buf, 0xa5, cases[i].cap);
        mt_recv r;
        uint64_t cookie = 0;
        if (cases[i].posted) {
            if (mt_irecv(&rcv, cases[i].src, cases[i].rtag, buf, cases[i].cap, &r))
                return 1;
            cookie = mt_isend(&snd, s, &dst, cases[i].tag, data, size);
        } else {
            cookie = mt_isend(&snd, s, &dst, cases[i].tag, data, size);
            usleep(200000); /* the message is at the NIC: case III */
            if (mt_irecv(&rcv, cases[i].src, cases[i].rtag, buf, cases[i].cap, &r))
                return 1;
        }
        uint32_t len = 0, src = 0, tag = 0, how = 0;
        int st = mt_wait(&r, &len, &src, &tag, &how);
        if (sabotage && i == 0)
            data[size / 2] ^= 1; /* the reference, one bit */
        const char *err = NULL;
        if (st != (int)cases[i].want_status)
            err = st < 0 ? "the receive did not complete" : "the receive's status is not the expected one";
        else if (len != size || src != from || tag != cases[i].tag)
            err = "the completion's length, source or tag differ from the send's";
        else if (st == UC_MT_OK && memcmp(buf, data, size))
            err = "the received bytes differ from the sent ones";
        else if (how != (cases[i].posted ? UC_MT_HOW_POSTED : UC_MT_HOW_UNEXPECTED))
            err = "matched on the other path than the case's";
        else if (mt_send_wait(&snd, cookie))
            err = "the rendezvous send got no FIN";
        if (err) {
            ok = 0;
            size_t at = strlen(errs);
            snprintf(errs + at, sizeof errs - at, "%s\"case %zu: %s\"", at ? ", " : "", i, err);
        }
    }
    printf("{\"verified\": %s, \"cases\": %d, \"errors\": [%s]}\n", ok ? "true" : "false", n, errs);
    close(s);
    ss_client_close(snd.c);
    ss_client_close(rcv.c);
    return ok ? 0 : 1;
}
