/* PsPIN's generic simulation driver (gdriver.h) over pspinsim.h.
 *
 * Options and defaults are PsPIN's (examples/generic_driver/gdriver_args.ggo):
 *   -m/--num-messages 1, -p/--num-packets 32, -s/--packet-size 1024,
 *   -d/--packet-delay 20 (ns), -l/--message-delay 40 (ns),
 *   -t/--trace-file (none: use the generator).
 * Memory per ECTX follows PsPIN's driver: 1 MiB of L2 handler memory, 1 GiB
 * of host memory and 800 KiB of scratchpad per cluster, each split evenly
 * between the GDRIVER_EC_MAX ECTXs. Where softspin differs (a host image
 * larger than its share, the window size) docs/pspin-drivers.md says so. */
#define _GNU_SOURCE
#include "gdriver.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packets.h"
#include "pspinsim.h"
#include "softspin.h"

/* PsPIN driver's NIC/host memory plan, split between GDRIVER_EC_MAX ECTXs:
 * sizes from softspin.h (softspin_host::gdriver, shared with the CLI's
 * --gdriver), addresses as PsPIN's driver prints them. */
#define GDRIVER_EC_MAX SS_GDRIVER_EC_MAX
#define GD_L2_BASE 0x1c300000u
#define GD_L2_SIZE SS_GDRIVER_L2_SIZE
#define GD_HOST_BASE 0xdeadbeefdeadbeefull
#define GD_HOST_SIZE SS_GDRIVER_HOST_SIZE
#define GD_SCRATCHPAD_SIZE SS_GDRIVER_SCRATCHPAD_SIZE

#define GD_L2_CHUNK (GD_L2_SIZE / GDRIVER_EC_MAX)
#define GD_HOST_CHUNK (GD_HOST_SIZE / GDRIVER_EC_MAX)
#define GD_SCRATCHPAD_CHUNK (GD_SCRATCHPAD_SIZE / GDRIVER_EC_MAX)

#define GLOG(...) printf("[GDRIVER] " __VA_ARGS__)

struct gd_ectx {
    spin_ec_t ec;
    fill_packet_fun_t fill;
    char match[GDRIVER_MATCHING_CTX_MAXSIZE];
};

static struct {
    int inited;
    struct gd_ectx ectxs[GDRIVER_EC_MAX];
    int nectxs;
    /* generator */
    uint32_t messages, packets, packet_size, packet_delay, message_delay;
    /* trace */
    char *trace;
    match_packet_fun_t match;
    uint32_t sent, processed;
} G;

static void on_feedback(uint64_t user_ptr, uint64_t nic_arrival, uint64_t pspin_arrival, uint64_t done)
{
    (void)user_ptr;
    (void)nic_arrival;
    (void)pspin_arrival;
    (void)done;
    G.processed++;
}

static void on_nicmem_written(void *user_ptr)
{
    printf("Write to NIC memory completed (user_ptr: %p)\n", user_ptr);
}

/* A non-negative int option, or -1 with a message naming it. */
static long parse_count(const char *name, const char *arg)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || v < 0 || v > UINT32_MAX) {
        fprintf(stderr, "gdriver: --%s: `%s` is not a number in 0..%u\n", name, arg, UINT32_MAX);
        return -1;
    }
    return v;
}

static void usage(const char *prog)
{
    printf("Usage: %s [OPTIONS]\n"
           "Generic PsPIN simulation driver (softspin)\n\n"
           "  -m, --num-messages=INT   Number of messages  (default=`1')\n"
           "  -p, --num-packets=INT    Number of packets per message  (default=`32')\n"
           "  -s, --packet-size=INT    Packet size  (default=`1024')\n"
           "  -d, --packet-delay=INT   Delay (in ns) between consecutive packets  (default=`20')\n"
           "  -l, --message-delay=INT  Delay (in ns) between consecutive messages  (default=`40')\n"
           "  -t, --trace-file=STRING  Path to file with packet traces for simulation\n"
           "  -h, --help               Print help and exit\n",
           prog);
}

int gdriver_init(int argc, char **argv, match_packet_fun_t matching_cb, int *ectx_num)
{
    static const struct option opts[] = {
        {"num-messages", required_argument, NULL, 'm'},
        {"num-packets", required_argument, NULL, 'p'},
        {"packet-size", required_argument, NULL, 's'},
        {"packet-delay", required_argument, NULL, 'd'},
        {"message-delay", required_argument, NULL, 'l'},
        {"trace-file", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    if (ectx_num)
        *ectx_num = -1;
    memset(&G, 0, sizeof G);
    G.messages = 1;
    G.packets = 32;
    G.packet_size = 1024;
    G.packet_delay = 20;
    G.message_delay = 40;
    uint32_t *target[256] = {0};
    target['m'] = &G.messages;
    target['p'] = &G.packets;
    target['s'] = &G.packet_size;
    target['d'] = &G.packet_delay;
    target['l'] = &G.message_delay;
    optind = 1;
    int c, idx;
    while ((c = getopt_long(argc, argv, "m:p:s:d:l:t:h", opts, &idx)) != -1) {
        if (c == 't') {
            G.trace = optarg;
        } else if (c == 'h') {
            usage(argv[0]);
            exit(EXIT_SUCCESS);
        } else if (c >= 0 && c < 256 && target[c]) {
            const char *name = NULL;
            for (const struct option *o = opts; o->name; o++)
                if (o->val == c)
                    name = o->name;
            long v = parse_count(name, optarg);
            if (v < 0)
                return GDRIVER_ERR;
            *target[c] = (uint32_t)v;
        } else {
            return GDRIVER_ERR; /* getopt_long printed what was wrong */
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gdriver: unexpected argument `%s'\n", argv[optind]);
        return GDRIVER_ERR;
    }
    /* PsPIN's "NULL" means no trace file. */
    if (G.trace && !strcmp(G.trace, "NULL"))
        G.trace = NULL;
    if (!G.trace && (G.messages == 0 || G.packets == 0)) {
        fprintf(stderr, "gdriver: --num-messages and --num-packets must be at least 1\n");
        return GDRIVER_ERR;
    }
    if (!G.trace && G.packet_size < sizeof(pkt_hdr_t)) {
        fprintf(stderr, "gdriver: --packet-size %u is below the %zu bytes of IP and UDP headers\n",
                G.packet_size, sizeof(pkt_hdr_t));
        return GDRIVER_ERR;
    }
    G.match = matching_cb;

    pspin_conf_t conf;
    pspinsim_default_conf(&conf);
    if (pspinsim_init(argc, argv, &conf) != SPIN_SUCCESS)
        return GDRIVER_ERR;
    pspinsim_cb_set_pcie_mst_write_completion(on_nicmem_written);
    pspinsim_cb_set_pkt_feedback(on_feedback);
    G.inited = 1;
    if (ectx_num)
        *ectx_num = GDRIVER_EC_MAX;
    return GDRIVER_OK;
}

int gdriver_add_ectx(const char *hfile, const char *hh, const char *ph, const char *th,
                     fill_packet_fun_t fill_cb, void *l2_img, size_t l2_img_size,
                     void *matching_ctx, size_t matching_ctx_size)
{
    if (!G.inited || !hfile || G.nectxs == GDRIVER_EC_MAX ||
        matching_ctx_size > GDRIVER_MATCHING_CTX_MAXSIZE || (!hh && !ph && !th))
        return GDRIVER_ERR;
    int k = G.nectxs;
    struct gd_ectx *g = &G.ectxs[k];
    memset(g, 0, sizeof *g);
    spin_nic_addr_t addr[3] = {0, 0, 0};
    size_t size[3] = {0, 0, 0};
    const char *names[3] = {hh, ph, th};
    for (int h = 0; h < 3; h++)
        if (names[h] && spin_find_handler_by_name(hfile, names[h], &addr[h], &size[h]) != SPIN_SUCCESS)
            return GDRIVER_ERR;
    g->ec.hh_addr = addr[0];
    g->ec.hh_size = (mem_size_t)size[0];
    g->ec.ph_addr = addr[1];
    g->ec.ph_size = (mem_size_t)size[1];
    g->ec.th_addr = addr[2];
    g->ec.th_size = (mem_size_t)size[2];

    g->ec.handler_mem_addr = GD_L2_BASE + (uint32_t)k * GD_L2_CHUNK;
    g->ec.handler_mem_size = GD_L2_CHUNK;
    /* PsPIN's driver asserts here; softspin's L2 has room, so the ECTX's
     * handler memory grows to hold the host's image (filtering: 1 MiB). */
    if (l2_img && l2_img_size > g->ec.handler_mem_size) {
        GLOG("host image of %zu B is larger than the %u B PsPIN gives an ECTX: handler memory "
             "enlarged\n",
             l2_img_size, (unsigned)GD_L2_CHUNK);
        g->ec.handler_mem_size = (mem_size_t)l2_img_size;
    }
    g->ec.host_mem_addr = GD_HOST_BASE + (uint64_t)k * GD_HOST_CHUNK;
    g->ec.host_mem_size = (mem_size_t)GD_HOST_CHUNK;
    for (int c = 0; c < NUM_CLUSTERS; c++) {
        g->ec.scratchpad_addr[c] = (uint32_t)k * GD_SCRATCHPAD_CHUNK;
        g->ec.scratchpad_size[c] = GD_SCRATCHPAD_CHUNK;
    }
    g->fill = fill_cb;
    if (l2_img && l2_img_size &&
        spin_nicmem_write(g->ec.handler_mem_addr, l2_img, l2_img_size, NULL) != SPIN_SUCCESS)
        return GDRIVER_ERR;
    if (matching_ctx && matching_ctx_size) {
        memcpy(g->match, matching_ctx, matching_ctx_size);
        g->match[GDRIVER_MATCHING_CTX_MAXSIZE - 1] = '\0';
    }
    GLOG("ectx %d: hh 0x%x/%u ph 0x%x/%u th 0x%x/%u handler_mem 0x%x/%u host_mem 0x%llx/%u "
         "match %s\n",
         k, g->ec.hh_addr, g->ec.hh_size, g->ec.ph_addr, g->ec.ph_size, g->ec.th_addr,
         g->ec.th_size, g->ec.handler_mem_addr, g->ec.handler_mem_size,
         (unsigned long long)g->ec.host_mem_addr, g->ec.host_mem_size, g->match[0] ? g->match : "-");
    G.nectxs++;
    return GDRIVER_OK;
}

/* The driver's fill callback, or IP/UDP headers for the packet's length. */
static uint32_t fill(struct gd_ectx *g, uint32_t msg, uint32_t pkt, uint8_t *buf, uint32_t size,
                     uint32_t *l1)
{
    memset(buf, 0, size);
    *l1 = size;
    if (g->fill) {
        uint32_t n = g->fill(msg, pkt, buf, size, l1);
        if (n > size) {
            GLOG("fill_packet returned %u bytes for a %u-byte buffer: truncated\n", n, size);
            n = size;
        }
        size = n;
    } else {
        pkt_hdr_t *h = (pkt_hdr_t *)buf;
        h->ip_hdr.ihl = 5;
        h->ip_hdr.length = (uint16_t)size;
    }
    /* PsPIN's generic driver copies whole packets to L1. */
    *l1 = size;
    return size;
}

static int run_generator(void)
{
    uint8_t *buf = malloc(G.packet_size);
    if (!buf)
        return GDRIVER_ERR;
    GLOG("generator: %d ECTX(s) x %u message(s) x %u packet(s) of %u B, %u ns between packets, "
         "%u ns between messages\n",
         G.nectxs, G.messages, G.packets, G.packet_size, G.packet_delay, G.message_delay);
    /* The message id and packet index PsPIN's driver hands to fill_packet
     * and the NIC: a running message count plus the message's index, and a
     * running packet count plus the packet's index (so ids step by 2 in the
     * first ECTX). Drivers' fill callbacks were written against these. */
    uint32_t msgs_before = 0, pkts_before = 0;
    for (int k = 0; k < G.nectxs; k++) {
        for (uint32_t m = 0; m < G.messages; m++) {
            uint32_t msg_id = msgs_before + m;
            for (uint32_t p = 0; p < G.packets; p++) {
                uint32_t l1;
                uint32_t n = fill(&G.ectxs[k], msg_id, pkts_before + p, buf, G.packet_size, &l1);
                int last = p + 1 == G.packets;
                if (n == 0 ||
                    pspinsim_packet_add(&G.ectxs[k].ec, msg_id, buf, n, l1, (uint8_t)last,
                                        last ? G.message_delay : G.packet_delay, 0) != SPIN_SUCCESS) {
                    free(buf);
                    return GDRIVER_ERR;
                }
                G.sent++;
                pkts_before++;
            }
            msgs_before++;
        }
    }
    free(buf);
    pspinsim_packet_eos();
    return GDRIVER_OK;
}

/* PsPIN trace: a header "SOURCES PACKETS MAX_SIZE", then per line
 * "SRC DST SIZE GAP MSGID EOM"; a SIZE-0 line waits GAP ns before the next
 * packet, the source address picks the ECTX through the matching callback. */
static int run_trace(void)
{
    FILE *f = fopen(G.trace, "r");
    if (!f) {
        perror(G.trace);
        return GDRIVER_ERR;
    }
    unsigned sources, npackets, max;
    if (fscanf(f, "%u %u %u", &sources, &npackets, &max) != 3 || sources == 0 ||
        sources > (unsigned)G.nectxs || max == 0) {
        fprintf(stderr, "%s:1: header must be `SOURCES PACKETS MAX_SIZE' with 1..%d sources\n",
                G.trace, G.nectxs);
        fclose(f);
        return GDRIVER_ERR;
    }
    if (!G.match) {
        fprintf(stderr, "gdriver: a trace needs the matching callback of gdriver_init\n");
        fclose(f);
        return GDRIVER_ERR;
    }
    uint8_t *buf = malloc(max);
    char src[GDRIVER_MATCHING_CTX_MAXSIZE], dst[GDRIVER_MATCHING_CTX_MAXSIZE];
    unsigned size, gap, msgid, eom, lines = 0, line = 1;
    uint32_t pending_wait = 0;
    int last = -1, rc = GDRIVER_OK;
    uint32_t last_len = 0;
    uint8_t *last_buf = malloc(max);
    uint32_t last_msg = 0, last_l1 = 0;
    uint8_t last_eom = 0;
    /* A packet is added once the gap after it is known (PsPIN's waits come
     * after a packet; a trace's wait line comes before the next one). */
    while (buf && last_buf && fscanf(f, "%255s %255s %u %u %u %u", src, dst, &size, &gap, &msgid, &eom) == 6) {
        line++;
        lines++;
        printf("%s %s %u %u %u %u\n", src, dst, size, gap, msgid, eom);
        if (size == 0) {
            pending_wait += gap;
            continue;
        }
        if (size > max) {
            fprintf(stderr, "%s:%u: packet size %u above the header's maximum %u\n", G.trace, line, size, max);
            rc = GDRIVER_ERR;
            break;
        }
        int k;
        for (k = 0; k < G.nectxs; k++)
            if (G.match(src, G.ectxs[k].match))
                break;
        if (k == G.nectxs) {
            fprintf(stderr, "%s:%u: source %s matches no ECTX\n", G.trace, line, src);
            rc = GDRIVER_ERR;
            break;
        }
        if (last >= 0) {
            if (pspinsim_packet_add(&G.ectxs[last].ec, last_msg, last_buf, last_len, last_l1, last_eom,
                                    pending_wait, 0) != SPIN_SUCCESS) {
                rc = GDRIVER_ERR;
                break;
            }
            G.sent++;
        }
        pending_wait = 0;
        last_len = fill(&G.ectxs[k], msgid, 0, last_buf, size, &last_l1);
        last = k;
        last_msg = msgid;
        last_eom = (uint8_t)(eom != 0);
    }
    if (rc == GDRIVER_OK && last >= 0) {
        if (pspinsim_packet_add(&G.ectxs[last].ec, last_msg, last_buf, last_len, last_l1, last_eom,
                                pending_wait, 0) != SPIN_SUCCESS)
            rc = GDRIVER_ERR;
        else
            G.sent++;
    }
    if (rc == GDRIVER_OK && lines != npackets) {
        fprintf(stderr, "%s: header says %u lines, found %u\n", G.trace, npackets, lines);
        rc = GDRIVER_ERR;
    }
    free(buf);
    free(last_buf);
    fclose(f);
    pspinsim_packet_eos();
    return rc;
}

int gdriver_run()
{
    if (!G.inited || G.nectxs == 0)
        return GDRIVER_ERR;
    int rc = G.trace ? run_trace() : run_generator();
    if (rc != GDRIVER_OK)
        return rc;
    return pspinsim_run() == SPIN_SUCCESS ? GDRIVER_OK : GDRIVER_ERR;
}

int gdriver_fini()
{
    if (!G.inited)
        return GDRIVER_ERR;
    int sim = pspinsim_fini();
    int ok = sim == SPIN_SUCCESS && G.sent == G.processed && G.sent > 0;
    GLOG("packets sent %u, processed %u: %s\n", G.sent, G.processed, ok ? "OK" : "FAILED");
    G.inited = 0;
    return ok ? GDRIVER_OK : GDRIVER_ERR;
}
