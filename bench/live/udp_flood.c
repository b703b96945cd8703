/* The load generator of the receive-rate benchmark: sends minimum-size UDP
 * datagrams (18 B payload: a 60 B Ethernet frame, 64 B with the FCS a real
 * wire adds) as fast as one core allows, in batches of sendmmsg.
 *
 *   udp_flood udp    SRC_IP DST_IP PORT SECONDS IFACE DST_MAC
 *   udp_flood packet SRC_IP DST_IP PORT SECONDS IFACE DST_MAC
 *
 * udp: a connected UDP socket (the whole kernel UDP/IP send path).
 * packet: an AF_PACKET socket with PACKET_QDISC_BYPASS sending prebuilt
 *         Ethernet/IPv4/UDP frames straight to the driver (no IP stack, no
 *         qdisc): the faster of the two on veth.
 * Prints "T_NS FRAMES FULL_QUEUE_CALLS" progress lines every 50 ms
 * (CLOCK_MONOTONIC), then one JSON object: frames sent, seconds, Mpps.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"

#define BATCH 64
#define PAYLOAD 18

static uint16_t ip_csum(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint32_t s = 0;
    for (size_t i = 0; i + 1 < n; i += 2)
        s += (uint32_t)(b[i] << 8 | b[i + 1]);
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

int main(int argc, char **argv)
{
    if (argc < 8 || (strcmp(argv[1], "udp") && strcmp(argv[1], "packet"))) {
        fprintf(stderr, "usage: udp_flood udp|packet SRC_IP DST_IP PORT SECONDS IFACE DST_MAC\n");
        return 2;
    }
    int raw = !strcmp(argv[1], "packet");
    struct in_addr src, dst;
    if (inet_pton(AF_INET, argv[2], &src) != 1 || inet_pton(AF_INET, argv[3], &dst) != 1) {
        fprintf(stderr, "bad SRC_IP or DST_IP\n");
        return 2;
    }
    int port = (int)arg_long("PORT", argv[4], 1, 65535);
    long secs = arg_long("SECONDS", argv[5], 1, 3600);
    unsigned ifindex = if_nametoindex(argv[6]);
    if (!ifindex) {
        fprintf(stderr, "no interface '%s'\n", argv[6]);
        return 2;
    }
    uint8_t dmac[6];
    if (sscanf(argv[7], "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &dmac[0], &dmac[1], &dmac[2], &dmac[3], &dmac[4],
               &dmac[5]) != 6) {
        fprintf(stderr, "bad DST_MAC '%s'\n", argv[7]);
        return 2;
    }

    int fd;
    uint8_t frame[ETH_HLEN + 20 + 8 + PAYLOAD] = {0};
    uint8_t *data;
    size_t len;
    struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_ifindex = (int)ifindex, .sll_halen = 6};
    if (raw) {
        fd = socket(AF_PACKET, SOCK_RAW, 0); /* protocol 0: send only, receive nothing */
        if (fd < 0)
            die("socket(AF_PACKET)");
        int one = 1;
        if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) < 0)
            die("PACKET_QDISC_BYPASS");
        struct ifreq ifr = {0};
        snprintf(ifr.ifr_name, IFNAMSIZ, "%s", argv[6]);
        if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
            die("SIOCGIFHWADDR");
        memcpy(ll.sll_addr, dmac, 6);
        struct ether_header *eth = (void *)frame;
        memcpy(eth->ether_dhost, dmac, 6);
        memcpy(eth->ether_shost, ifr.ifr_hwaddr.sa_data, 6);
        eth->ether_type = htons(ETHERTYPE_IP);
        struct iphdr *ip = (void *)(frame + ETH_HLEN);
        ip->version = 4;
        ip->ihl = 5;
        ip->tot_len = htons(20 + 8 + PAYLOAD);
        ip->ttl = 64;
        ip->protocol = IPPROTO_UDP;
        ip->saddr = src.s_addr;
        ip->daddr = dst.s_addr;
        ip->check = htons(ip_csum(ip, 20));
        struct udphdr *udp = (void *)(frame + ETH_HLEN + 20);
        udp->source = htons(40000);
        udp->dest = htons(port);
        udp->len = htons(8 + PAYLOAD);
        udp->check = 0; /* optional in IPv4 (RFC 768) */
        data = frame;
        len = sizeof frame;
    } else {
        fd = socket(AF_INET, SOCK_DGRAM, 0);
        if (fd < 0)
            die("socket");
        struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = dst};
        if (connect(fd, (struct sockaddr *)&d, sizeof d) < 0)
            die("connect");
        data = frame + ETH_HLEN + 28;
        len = PAYLOAD;
    }
    int sndbuf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);

    struct iovec iov = {.iov_base = data, .iov_len = len};
    struct mmsghdr msgs[BATCH];
    for (int i = 0; i < BATCH; i++)
        msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov,
                                               .msg_iovlen = 1,
                                               .msg_name = raw ? &ll : NULL,
                                               .msg_namelen = raw ? sizeof ll : 0}};
    uint64_t t0 = now_ns(), t_end = t0 + (uint64_t)secs * 1000000000ull, n = 0, failed = 0, t, t_mark = t0;
    /* Progress lines let the driver take the send rate over exactly a
     * receiver's window (CLOCK_MONOTONIC is the same in every namespace). */
    printf("%llu %llu %llu\n", (unsigned long long)t0, 0ull, 0ull);
    do {
        int r = sendmmsg(fd, msgs, BATCH, 0);
        if (r > 0)
            n += (uint64_t)r;
        else if (errno == ENOBUFS || errno == EAGAIN || errno == ECONNREFUSED)
            failed++; /* full queue, or an ICMP port unreachable before the receiver binds */
        else
            die("sendmmsg");
        t = now_ns();
        if (t - t_mark >= 50000000ull) {
            printf("%llu %llu %llu\n", (unsigned long long)t, (unsigned long long)n, (unsigned long long)failed);
            t_mark = t;
        }
    } while (t < t_end);
    printf("%llu %llu %llu\n", (unsigned long long)t, (unsigned long long)n, (unsigned long long)failed);
    double s = (double)(t - t0) / 1e9;
    printf("{\"mode\": \"%s\", \"frames\": %llu, \"failed_calls\": %llu, \"seconds\": %.6f, \"mpps\": %.6f, "
           "\"frame_bytes\": %zu}\n",
           argv[1], (unsigned long long)n, (unsigned long long)failed, s, (double)n / s / 1e6,
           (size_t)(ETH_HLEN + 28 + PAYLOAD));
    return 0;
}
