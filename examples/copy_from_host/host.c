/*
 * copy_from_host, the host side: lend the NIC 1 MiB of pseudo-random data,
 * send read requests (id, offset, length) and check every reply packet the
 * handlers sent against our own buffer, byte for byte. Exits 1 on any
 * mismatch, missing or duplicate reply.
 *
 * usage: host HANDLER.elf [--sabotage]   (--sabotage: expect one wrong byte, so
 *        the check must fail; the tests use it to prove the check bites)
 */
#include <softspin.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOST_SIZE (1 << 20)
#ifndef REQUESTS
#define REQUESTS 256
#endif
#define MAX_READ 1024
#define PORT 4000 /* the ECTX takes UDP packets to this port */
#define HDRS 28   /* PsPIN IP/UDP headers */
#define REQ 12    /* id, offset, length */
#define SLOT (HDRS + REQ + MAX_READ) /* a reply's staging slot, per HPU */

#define SS(call)                                                                         \
    do {                                                                                 \
        int rc_ = (call);                                                                \
        if (rc_ != SS_OK) {                                                              \
            fprintf(stderr, "%s: %s: %s\n", #call, ss_strerror(rc_), ss_last_error());   \
            exit(2);                                                                     \
        }                                                                                \
    } while (0)

static uint8_t host_mem[HOST_SIZE]; /* lent to the NIC */
static uint8_t expect[HOST_SIZE];   /* our own copy, to check against */
static uint32_t req_off[REQUESTS], req_len[REQUESTS];
static int replies[REQUESTS];

static uint64_t rng = 88172645463325252ull;

static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static uint32_t le32(const uint8_t *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

/* RFC 1071: a valid header sums to 0xffff. */
static int ip_header_ok(const uint8_t *h)
{
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2)
        sum += (uint32_t)h[i] << 8 | h[i + 1];
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return sum == 0xffff;
}

static int check_reply(const uint8_t *f, size_t len, int sabotage)
{
    if (len < HDRS + REQ) {
        fprintf(stderr, "mismatch: a %zu-byte reply is too short\n", len);
        return 0;
    }
    uint32_t id = le32(f + HDRS), off = le32(f + HDRS + 4), n = le32(f + HDRS + 8);
    if (id >= REQUESTS || off != req_off[id] || n != req_len[id]) {
        fprintf(stderr, "mismatch: reply (id %u, offset %u, length %u) answers no request\n", id, off, n);
        return 0;
    }
    if (len != HDRS + REQ + n || le16(f + 2) != len || !ip_header_ok(f) || le16(f + 20) != PORT ||
        le16(f + 22) != 9330 || le16(f + 24) != 8 + REQ + n) {
        fprintf(stderr, "mismatch: reply %u has bad headers (%zu bytes)\n", id, len);
        return 0;
    }
    if (sabotage && id == REQUESTS / 2)
        expect[off] ^= 1;
    if (memcmp(f + HDRS + REQ, expect + off, n) != 0) {
        for (uint32_t i = 0; i < n; i++)
            if (f[HDRS + REQ + i] != expect[off + i]) {
                fprintf(stderr, "mismatch: reply %u byte %u (host offset %u): 0x%02x, host memory has 0x%02x\n",
                        id, i, off + i, f[HDRS + REQ + i], expect[off + i]);
                break;
            }
        return 0;
    }
    replies[id]++;
    return 1;
}

int main(int argc, char **argv)
{
    const char *elf = argc > 1 ? argv[1] : "handler.elf";
    int sabotage = argc > 2 && strcmp(argv[2], "--sabotage") == 0;

    for (size_t i = 0; i < HOST_SIZE; i++)
        host_mem[i] = expect[i] = (uint8_t)next_u32();

    ss_nic *nic;
    ss_image *img;
    ss_host_window win;
    ss_ectx ectx;
    ss_ectx_options o;
    SS(ss_open("pspin", &nic));
    SS(ss_image_load(nic, elf, &img));
    SS(ss_host_lend(nic, host_mem, sizeof host_mem, &win));
    SS(ss_ectx_options_init(&o));
    o.ph = "read_ph";
    o.host_window = win;
    o.udp_dst_port = PORT;
    /* Staging room in L1: one slot per HPU of each cluster. */
    ss_nic_info info;
    SS(ss_nic_get_info(nic, &info));
    uint32_t scratch[64];
    for (uint32_t c = 0; c < info.clusters && c < 64; c++)
        scratch[c] = info.hpus_per_cluster * SLOT;
    o.scratchpad = scratch;
    o.scratchpad_len = info.clusters < 64 ? info.clusters : 64;
    SS(ss_install(nic, img, &o, &ectx));
    SS(ss_activate(nic, ectx));

    /* One request every 20 ns (replies average ~500 B: about 200 Gbit/s
     * across PCIe, under its 252); each request is a one-packet message. */
    uint64_t bytes = 0;
    for (uint32_t id = 0; id < REQUESTS; id++) {
        req_len[id] = 1 + next_u32() % MAX_READ;
        req_off[id] = next_u32() % (HOST_SIZE - req_len[id] + 1);
        bytes += req_len[id];
        uint32_t req[3] = {id, req_off[id], req_len[id]}; /* little-endian host */
        uint8_t frame[HDRS + REQ];
        size_t len;
        SS(ss_build_frame(SS_FRAME_IP, PORT, req, sizeof req, frame, sizeof frame, &len));
        SS(ss_send_packet(nic, frame, len, id, 1));
        SS(ss_run_for_ns(nic, 20));
    }
    SS(ss_run_until_idle(nic));

    int ok = 1, outbound = 0;
    ss_event ev;
    for (;;) {
        SS(ss_next_event(nic, &ev));
        if (ev.kind == SS_EVENT_NONE)
            break;
        if (ev.kind == SS_EVENT_OUTBOUND) {
            outbound++;
            ok &= check_reply(ev.data, ev.data_len, sabotage);
        } else if (ev.kind == SS_EVENT_HANDLER_ERROR) {
            fprintf(stderr, "handler error: %s in %s at pc 0x%08x\n", ev.cause, ev.handler, ev.pc);
            ok = 0;
        }
    }
    for (uint32_t id = 0; id < REQUESTS; id++)
        if (replies[id] != 1) {
            fprintf(stderr, "mismatch: request %u got %d replies\n", id, replies[id]);
            ok = 0;
        }
    /* The handlers only read host memory. */
    if (memcmp(host_mem, expect, HOST_SIZE) != 0 && !sabotage) {
        fprintf(stderr, "mismatch: host memory changed\n");
        ok = 0;
    }

    ss_report r;
    SS(ss_get_report(nic, &r));
    printf("copy_from_host: %d read requests for %llu B in all, %d replies\n", REQUESTS,
           (unsigned long long)bytes, outbound);
    printf("  NIC: %llu B from the host, %llu packets out (%llu B), %.2f Mpkt/s\n",
           (unsigned long long)r.dma_from_host_bytes, (unsigned long long)r.outbound_packets,
           (unsigned long long)r.outbound_bytes, r.mpps);
    printf("  request latency ns (arrival to reply sent): min %.1f  mean %.1f  p99 %.1f  max %.1f\n",
           r.latency_min_ns, r.latency_mean_ns, r.latency_p99_ns, r.latency_max_ns);
    if (ok)
        printf("copy_from_host: every reply matches host memory byte for byte\n");
    else
        fprintf(stderr, "copy_from_host: FAILED\n");

    ss_image_free(img);
    ss_close(nic);
    return !ok;
}
