/* The I/O ceilings of the receive-rate benchmark, with only the kernel's
 * headers (no libbpf, no libxdp): the XDP program is a handful of BPF
 * instructions loaded with the bpf() system call and attached through a BPF
 * link, so it goes away when this process exits.
 *
 *   afxdp_drop xsk  IFACE SECONDS   AF_XDP receive-and-drop on queue 0 (copy
 *                                   mode, as softspin's port): the program
 *                                   redirects every frame to the socket, the
 *                                   loop hands each buffer straight back to
 *                                   the fill ring. The ceiling for any
 *                                   AF_XDP receiver on this interface.
 *   afxdp_drop drop IFACE SECONDS   XDP_DROP in the driver, counted in a BPF
 *                                   array: the ceiling of the interface
 *                                   itself (nothing leaves the kernel).
 *   afxdp_drop echo IFACE SECONDS   AF_XDP ICMP echo responder (copy mode,
 *                                   a loop that never sleeps, replies
 *                                   written in place): the round-trip floor
 *                                   of any AF_XDP user-space responder,
 *                                   softspin's included. Stops after
 *                                   SECONDS or at SIGINT/SIGTERM.
 *
 * The window starts at the first frame and lasts SECONDS; xsk adds the
 * socket's XDP_STATISTICS (whole run: frames the kernel dropped because the
 * RX ring was full or the fill ring had no buffer). Prints one JSON
 * object: packets, window (and its CLOCK_MONOTONIC ends), Mpps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

#define NUM_FRAMES 4096
#define FRAME_SIZE 2048
#define RING 2048

static long bpf(int cmd, union bpf_attr *a) { return syscall(__NR_bpf, cmd, a, sizeof *a); }

static int map_create(int type, unsigned key, unsigned value, unsigned entries)
{
    union bpf_attr a = {0};
    a.map_type = type;
    a.key_size = key;
    a.value_size = value;
    a.max_entries = entries;
    int fd = (int)bpf(BPF_MAP_CREATE, &a);
    if (fd < 0)
        die("BPF_MAP_CREATE");
    return fd;
}

#define INSN(c, d, s, o, i) ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})
#define LD_MAP(d, fd) INSN(BPF_LD | BPF_DW | BPF_IMM, d, BPF_PSEUDO_MAP_FD, 0, fd), INSN(0, 0, 0, 0, 0)
#define MOV_IMM(d, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define CALL(f) INSN(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define EXIT() INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

static int prog_load(struct bpf_insn *insns, unsigned n)
{
    static char log[65536];
    union bpf_attr a = {0};
    a.prog_type = BPF_PROG_TYPE_XDP;
    a.insns = (uint64_t)(uintptr_t)insns;
    a.insn_cnt = n;
    a.license = (uint64_t)(uintptr_t)"GPL";
    a.log_buf = (uint64_t)(uintptr_t)log;
    a.log_size = sizeof log;
    a.log_level = 1;
    int fd = (int)bpf(BPF_PROG_LOAD, &a);
    if (fd < 0) {
        fprintf(stderr, "verifier: %s\n", log);
        die("BPF_PROG_LOAD");
    }
    return fd;
}

static void attach(int prog, unsigned ifindex)
{
    union bpf_attr a = {0};
    a.link_create.prog_fd = (uint32_t)prog;
    a.link_create.target_ifindex = ifindex;
    a.link_create.attach_type = BPF_XDP;
    a.link_create.flags = XDP_FLAGS_DRV_MODE;
    if (bpf(BPF_LINK_CREATE, &a) < 0)
        die("BPF_LINK_CREATE (XDP, driver mode)");
    /* The link's fd stays open until exit; the kernel detaches then. */
}

static void report(uint64_t n, uint64_t t_start, const char *extra)
{
    uint64_t t = now_ns();
    double w = t_start ? (double)(t - t_start) / 1e9 : 0;
    printf("{\"packets\": %llu, \"window_s\": %.6f, \"mpps\": %.6f, \"t_start_ns\": %llu, \"t_end_ns\": %llu%s}\n",
           (unsigned long long)n, w, w > 0 ? (double)n / w / 1e6 : 0.0, (unsigned long long)t_start,
           (unsigned long long)t, extra);
}

static int run_drop(unsigned ifindex, long secs)
{
    int map = map_create(BPF_MAP_TYPE_ARRAY, 4, 8, 1);
    struct bpf_insn p[] = {
        INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, 0),        /* key = 0 */
        INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0), /* r2 = &key */
        INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4),
        LD_MAP(BPF_REG_1, map),
        CALL(BPF_FUNC_map_lookup_elem),
        INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 2, 0), /* NULL: skip the count */
        MOV_IMM(BPF_REG_1, 1),
        INSN(BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_0, BPF_REG_1, 0, BPF_ADD), /* count++ */
        MOV_IMM(BPF_REG_0, XDP_DROP),
        EXIT(),
    };
    attach(prog_load(p, sizeof p / sizeof p[0]), ifindex);
    fprintf(stderr, "afxdp_drop: XDP_DROP attached\n");
    uint32_t key = 0;
    uint64_t v = 0, v0 = 0, t_start = 0, t_end = 0, t_wait = now_ns() + 10000000000ull;
    union bpf_attr a = {0};
    a.map_fd = (uint32_t)map;
    a.key = (uint64_t)(uintptr_t)&key;
    a.value = (uint64_t)(uintptr_t)&v;
    for (;;) {
        usleep(1000);
        if (bpf(BPF_MAP_LOOKUP_ELEM, &a) < 0)
            die("BPF_MAP_LOOKUP_ELEM");
        uint64_t t = now_ns();
        if (!t_start && v) {
            t_start = t;
            t_end = t + (uint64_t)secs * 1000000000ull;
            v0 = v;
        }
        if (t_start ? t >= t_end : t >= t_wait)
            break;
    }
    report(v - v0, t_start, "");
    return v ? 0 : 1;
}

/* The XDP program of the AF_XDP modes: every frame (xsk) or only IPv4
 * ICMP (echo; ARP and the rest stay with the kernel) to the socket on the
 * frame's queue. */
static int xsk_prog(int xsks, int icmp_only)
{
    struct bpf_insn all[] = {
        INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 16, 0), /* ctx->rx_queue_index */
        LD_MAP(BPF_REG_1, xsks),
        MOV_IMM(BPF_REG_3, XDP_PASS), /* no socket on this queue: to the kernel */
        CALL(BPF_FUNC_redirect_map),
        EXIT(),
    };
    struct bpf_insn icmp[] = {
        INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0, 0),
        INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 0, 0), /* ctx->data */
        INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_3, BPF_REG_1, 4, 0), /* ctx->data_end */
        INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_4, BPF_REG_2, 0, 0),
        INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_4, 0, 0, 34),   /* Ethernet + IPv4 header */
        INSN(BPF_JMP | BPF_JGT | BPF_X, BPF_REG_4, BPF_REG_3, 10, 0),
        INSN(BPF_LDX | BPF_MEM | BPF_H, BPF_REG_5, BPF_REG_2, 12, 0), /* EtherType */
        INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_5, 0, 8, 0x0008),   /* 0x0800, read little-endian */
        INSN(BPF_LDX | BPF_MEM | BPF_B, BPF_REG_5, BPF_REG_2, 23, 0), /* IP protocol */
        INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_5, 0, 6, 1),        /* ICMP */
        INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_6, 16, 0),
        LD_MAP(BPF_REG_1, xsks),
        MOV_IMM(BPF_REG_3, XDP_PASS),
        CALL(BPF_FUNC_redirect_map),
        EXIT(),
        MOV_IMM(BPF_REG_0, XDP_PASS),
        EXIT(),
    };
    return icmp_only ? prog_load(icmp, sizeof icmp / sizeof icmp[0]) : prog_load(all, sizeof all / sizeof all[0]);
}

/* One AF_XDP socket on queue 0 in copy mode (as softspin's port) with its
 * UMEM and rings; the TX and completion rings only when it answers. */
struct xsk {
    int fd;
    uint8_t *umem;
    volatile uint32_t *rx_prod, *rx_cons, *fq_prod, *tx_prod, *cq_prod, *cq_cons;
    struct xdp_desc *rx_desc, *tx_desc;
    uint64_t *fq_addr, *cq_addr;
};

static void *ring_map(int fd, size_t len, off_t pgoff)
{
    void *r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, pgoff);
    if (r == MAP_FAILED)
        die("mmap ring");
    return r;
}

static struct xsk xsk_open(unsigned ifindex, int icmp_only, int tx)
{
    struct xsk x = {0};
    int xsks = map_create(BPF_MAP_TYPE_XSKMAP, 4, 4, 64);
    int prog = xsk_prog(xsks, icmp_only);
    x.fd = socket(AF_XDP, SOCK_RAW, 0);
    if (x.fd < 0)
        die("socket(AF_XDP)");
    x.umem = mmap(NULL, (size_t)NUM_FRAMES * FRAME_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (x.umem == MAP_FAILED)
        die("mmap umem");
    struct xdp_umem_reg reg = {.addr = (uint64_t)(uintptr_t)x.umem, .len = (uint64_t)NUM_FRAMES * FRAME_SIZE,
                               .chunk_size = FRAME_SIZE};
    if (setsockopt(x.fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof reg) < 0)
        die("XDP_UMEM_REG");
    int ring = RING;
    if (setsockopt(x.fd, SOL_XDP, XDP_UMEM_FILL_RING, &ring, sizeof ring) < 0 ||
        setsockopt(x.fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &ring, sizeof ring) < 0 ||
        setsockopt(x.fd, SOL_XDP, XDP_RX_RING, &ring, sizeof ring) < 0 ||
        (tx && setsockopt(x.fd, SOL_XDP, XDP_TX_RING, &ring, sizeof ring) < 0))
        die("XDP ring sizes");
    struct xdp_mmap_offsets off;
    socklen_t ol = sizeof off;
    if (getsockopt(x.fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &ol) < 0)
        die("XDP_MMAP_OFFSETS");
    uint8_t *rx = ring_map(x.fd, off.rx.desc + RING * sizeof(struct xdp_desc), XDP_PGOFF_RX_RING);
    uint8_t *fq = ring_map(x.fd, off.fr.desc + RING * sizeof(uint64_t), XDP_UMEM_PGOFF_FILL_RING);
    x.rx_prod = (void *)(rx + off.rx.producer);
    x.rx_cons = (void *)(rx + off.rx.consumer);
    x.rx_desc = (void *)(rx + off.rx.desc);
    x.fq_prod = (void *)(fq + off.fr.producer);
    x.fq_addr = (void *)(fq + off.fr.desc);
    if (tx) {
        uint8_t *t = ring_map(x.fd, off.tx.desc + RING * sizeof(struct xdp_desc), XDP_PGOFF_TX_RING);
        uint8_t *cq = ring_map(x.fd, off.cr.desc + RING * sizeof(uint64_t), XDP_UMEM_PGOFF_COMPLETION_RING);
        x.tx_prod = (void *)(t + off.tx.producer);
        x.tx_desc = (void *)(t + off.tx.desc);
        x.cq_prod = (void *)(cq + off.cr.producer);
        x.cq_cons = (void *)(cq + off.cr.consumer);
        x.cq_addr = (void *)(cq + off.cr.desc);
    }
    /* RING frames circulate (fill -> RX -> [TX -> completion ->] fill), so
     * the fill ring never holds more than it can. */
    for (uint32_t i = 0; i < RING; i++)
        x.fq_addr[i] = (uint64_t)i * FRAME_SIZE;
    __atomic_store_n(x.fq_prod, RING, __ATOMIC_RELEASE);

    struct sockaddr_xdp sa = {.sxdp_family = AF_XDP, .sxdp_ifindex = ifindex, .sxdp_queue_id = 0,
                              .sxdp_flags = XDP_COPY};
    if (bind(x.fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        die("bind(AF_XDP, copy mode)");
    uint32_t key = 0, val = (uint32_t)x.fd;
    union bpf_attr a = {0};
    a.map_fd = (uint32_t)xsks;
    a.key = (uint64_t)(uintptr_t)&key;
    a.value = (uint64_t)(uintptr_t)&val;
    if (bpf(BPF_MAP_UPDATE_ELEM, &a) < 0)
        die("XSKMAP update");
    attach(prog, ifindex);
    return x;
}

static int run_xsk(unsigned ifindex, long secs)
{
    struct xsk x = xsk_open(ifindex, 0, 0);
    fprintf(stderr, "afxdp_drop: AF_XDP socket on queue 0 attached\n");

    uint32_t cons = *x.rx_cons, fprod = RING;
    uint64_t n = 0, t_start = 0, t_end = 0, t_wait = now_ns() + 10000000000ull, t;
    struct pollfd pfd = {.fd = x.fd, .events = POLLIN};
    for (;;) {
        uint32_t prod = __atomic_load_n(x.rx_prod, __ATOMIC_ACQUIRE);
        uint32_t k = prod - cons;
        if (k) {
            /* Drop: every received buffer goes straight back to the fill ring. */
            for (uint32_t i = 0; i < k; i++)
                x.fq_addr[(fprod + i) & (RING - 1)] = x.rx_desc[(cons + i) & (RING - 1)].addr;
            cons += k;
            fprod += k;
            __atomic_store_n(x.rx_cons, cons, __ATOMIC_RELEASE);
            __atomic_store_n(x.fq_prod, fprod, __ATOMIC_RELEASE);
            if (!t_start) {
                t_start = now_ns();
                t_end = t_start + (uint64_t)secs * 1000000000ull;
                k = 0; /* the first batch opens the window */
            }
            n += k;
        } else {
            poll(&pfd, 1, 1); /* nothing there: sleep until the kernel has frames */
        }
        t = now_ns();
        if (t_start ? t >= t_end : t >= t_wait)
            break;
    }
    /* Where frames the loop never saw went: the kernel's own counters. */
    struct xdp_statistics st = {0};
    socklen_t sl = sizeof st;
    if (getsockopt(x.fd, SOL_XDP, XDP_STATISTICS, &st, &sl) < 0)
        die("XDP_STATISTICS");
    char extra[160];
    snprintf(extra, sizeof extra, ", \"xsk_rx_dropped\": %llu, \"xsk_rx_ring_full\": %llu, \"xsk_fill_ring_empty\": %llu",
             (unsigned long long)st.rx_dropped, (unsigned long long)st.rx_ring_full,
             (unsigned long long)st.rx_fill_ring_empty_descs);
    report(n, t_start, extra);
    return n ? 0 : 1;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

/* The floor of any AF_XDP responder here: ICMP echo requests answered in
 * place in the UMEM (addresses swapped, type 8 -> 0, checksum adjusted) by
 * a loop that never sleeps, until SECONDS pass or SIGINT/SIGTERM. Prints
 * the replies sent and the frames that were not echo requests. */
static int run_echo(unsigned ifindex, long secs)
{
    struct xsk x = xsk_open(ifindex, 1, 1);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    fprintf(stderr, "afxdp_drop: ICMP echo on queue 0 attached\n");
    uint32_t rcons = *x.rx_cons, fprod = RING, tprod = *x.tx_prod, ccons = *x.cq_cons;
    uint64_t replies = 0, other = 0, t_end = now_ns() + (uint64_t)secs * 1000000000ull;
    while (!stop && now_ns() < t_end) {
        uint32_t k = __atomic_load_n(x.rx_prod, __ATOMIC_ACQUIRE) - rcons, sent = 0;
        for (uint32_t i = 0; i < k; i++) {
            struct xdp_desc d = x.rx_desc[(rcons + i) & (RING - 1)];
            uint8_t *f = x.umem + d.addr, tmp[6];
            if (d.len < 42 || f[14] != 0x45 || f[34] != 8) { /* not a plain echo request: buffer back */
                x.fq_addr[fprod++ & (RING - 1)] = d.addr;
                other++;
                continue;
            }
            memcpy(tmp, f, 6), memcpy(f, f + 6, 6), memcpy(f + 6, tmp, 6);
            memcpy(tmp, f + 26, 4), memcpy(f + 26, f + 30, 4), memcpy(f + 30, tmp, 4);
            f[34] = 0; /* the checksum word 0x08xx becomes 0x00xx: add 0x0800 back */
            uint32_t c = ((uint32_t)f[36] << 8 | f[37]) + 0x0800;
            c = (c & 0xffff) + (c >> 16);
            f[36] = (uint8_t)(c >> 8), f[37] = (uint8_t)c;
            x.tx_desc[tprod++ & (RING - 1)] = d;
            sent++;
        }
        if (k) {
            rcons += k;
            __atomic_store_n(x.rx_cons, rcons, __ATOMIC_RELEASE);
        }
        if (sent) {
            __atomic_store_n(x.tx_prod, tprod, __ATOMIC_RELEASE);
            if (sendto(x.fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 && errno != EAGAIN && errno != EBUSY &&
                errno != ENOBUFS)
                die("sendto (TX kick)");
            replies += sent;
        }
        /* Sent buffers come back through the completion ring to the fill ring. */
        uint32_t c = __atomic_load_n(x.cq_prod, __ATOMIC_ACQUIRE) - ccons;
        for (uint32_t i = 0; i < c; i++)
            x.fq_addr[fprod++ & (RING - 1)] = x.cq_addr[ccons++ & (RING - 1)];
        if (c)
            __atomic_store_n(x.cq_cons, ccons, __ATOMIC_RELEASE);
        __atomic_store_n(x.fq_prod, fprod, __ATOMIC_RELEASE);
    }
    printf("{\"replies\": %llu, \"other_frames\": %llu}\n", (unsigned long long)replies, (unsigned long long)other);
    return replies ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "xsk") && strcmp(argv[1], "drop") && strcmp(argv[1], "echo"))) {
        fprintf(stderr, "usage: afxdp_drop xsk|drop|echo IFACE SECONDS\n");
        return 2;
    }
    unsigned ifindex = if_nametoindex(argv[2]);
    if (!ifindex) {
        fprintf(stderr, "no interface '%s'\n", argv[2]);
        return 2;
    }
    long secs = arg_long("SECONDS", argv[3], 1, 3600);
    if (!strcmp(argv[1], "echo"))
        return run_echo(ifindex, secs);
    return !strcmp(argv[1], "xsk") ? run_xsk(ifindex, secs) : run_drop(ifindex, secs);
}
