/*
 * cluster_hello: a handler that knows its cluster (issue 27; spin_node.h).
 *
 *   hello_ph  answers each UDP request to this node's port (Ethernet II /
 *             IPv4 without options / UDP) with a hello_reply_t built from
 *             the node table alone: this node's rank and the cluster's size,
 *             the rank whose IPv4 and MAC sent the request (-1 if none) and
 *             that node's entry, and this node's own entry. The reply's
 *             addresses (MAC, IPv4, UDP port) are this node's entry and
 *             the sender's, so a reply that arrives proves the table right.
 *             Anything else is left alone.
 */
#include <spin.h>

#define HELLO_MAGIC 0x4f4c4548u /* "HELO" in memory order */

/* The reply's payload (little-endian numbers; entries as in spin_node.h). */
typedef struct hello_reply {
    uint32_t magic;
    int32_t my_rank;
    uint32_t num_nodes;
    int32_t sender_rank;
    spin_node_t sender; /* zeros when the sender is not in the table */
    spin_node_t me;
} __attribute__((__packed__)) hello_reply_t;

/* The rank whose address and MAC are the frame's source, or -1. */
static int32_t sender_rank(const eth_udp_pkt_hdr_t *h)
{
    for (uint32_t k = 0; k < spin_num_nodes(); k++) {
        const spin_node_t *n = spin_node(k);
        if (n->ipv4 == h->ip_hdr.saddr && memcmp(n->mac, h->eth_hdr.src.data, ETH_ALEN) == 0)
            return (int32_t)k;
    }
    return -1;
}

__handler__ void hello_ph(handler_args_t *args)
{
    task_t *t = args->task;
    const eth_udp_pkt_hdr_t *h = (const eth_udp_pkt_hdr_t *)t->pkt_mem;
    /* spin_my_rank() is -1 without a table: spin_node(0xffffffff) is NULL. */
    const spin_node_t *me = spin_node((uint32_t)spin_my_rank());
    if (!me || t->pkt_mem_size < sizeof(*h) || ntohs(h->eth_hdr.ethertype) != ETHERTYPE_IPV4 ||
        h->ip_hdr.version_ihl != 0x45 || h->ip_hdr.protocol != IP_PROTO_UDP ||
        h->udp_hdr.dst_port != me->udp_port)
        return;

    /* Built on the stack (this HPU's L1), sent, and waited for before the
     * stack frame goes away. */
    struct {
        eth_udp_pkt_hdr_t h;
        hello_reply_t r;
    } __attribute__((__packed__)) out;
    memset(&out, 0, sizeof(out));
    int32_t s = sender_rank(h);
    out.r.magic = HELLO_MAGIC;
    out.r.my_rank = spin_my_rank();
    out.r.num_nodes = spin_num_nodes();
    out.r.sender_rank = s;
    if (s >= 0)
        out.r.sender = *spin_node((uint32_t)s);
    out.r.me = *me;

    memcpy(out.h.eth_hdr.dest.data, h->eth_hdr.src.data, ETH_ALEN);
    memcpy(out.h.eth_hdr.src.data, me->mac, ETH_ALEN);
    out.h.eth_hdr.ethertype = htons(ETHERTYPE_IPV4);
    out.h.ip_hdr.version_ihl = 0x45;
    out.h.ip_hdr.length = htons(sizeof(ipv4_hdr_t) + sizeof(udp_wire_hdr_t) + sizeof(hello_reply_t));
    out.h.ip_hdr.frag_offset = htons(0x4000); /* DF */
    out.h.ip_hdr.ttl = 64;
    out.h.ip_hdr.protocol = IP_PROTO_UDP;
    out.h.ip_hdr.saddr = me->ipv4;
    out.h.ip_hdr.daddr = h->ip_hdr.saddr;
    out.h.ip_hdr.checksum = ip_checksum(&out.h.ip_hdr, sizeof(ipv4_hdr_t));
    out.h.udp_hdr.src_port = me->udp_port;
    out.h.udp_hdr.dst_port = h->udp_hdr.src_port;
    out.h.udp_hdr.length = htons(sizeof(udp_wire_hdr_t) + sizeof(hello_reply_t));
    /* UDP checksum 0: none (RFC 768), as a NIC may send over IPv4. */
    spin_cmd_t cmd;
    if (spin_send_packet(&out, sizeof(out), &cmd) == SPIN_OK)
        spin_cmd_wait(cmd);
}
