/*
 * spin_node.h - the cluster's node table, as handlers see it (issue 27,
 * docs/cluster.md).
 *
 * A NIC started with a node table (`softspin nic|sim --nodes FILE --rank K`,
 * `Nic::set_node_table`) holds it in a read-only region of NIC memory at
 * SOFTSPIN_NODE_TABLE_BASE: its own rank and, per rank, the node's IPv4
 * address, MAC and UDP port, enough to build the Ethernet/IPv4/UDP headers
 * of a frame to any node. A store to it faults. Without a table,
 * spin_my_rank() is -1 and spin_num_nodes() is 0.
 *
 * Byte order: `ipv4` and `udp_port` are in network byte order, as in the
 * headers (copy them into a frame as they are; ntohl/ntohs to compute with
 * them); `mac` is as on the wire; `rank` is a plain (host-order) number.
 * The layout is mirrored in crates/hpu/src/abi.rs (`node_table`), and
 * crates/hpu/tests/abi.rs checks that both agree.
 */
#ifndef SPIN_NODE_H
#define SPIN_NODE_H

#include <stddef.h>
#include <stdint.h>
#include "softspin_abi.h"

/* my_rank of a NIC without a node table. */
#define SPIN_NO_RANK 0xffffffffu

typedef struct spin_node {
    uint32_t ipv4;     /* network byte order */
    uint8_t mac[6];    /* as on the wire */
    uint16_t udp_port; /* network byte order */
    uint32_t rank;     /* host order: its index in the table */
} spin_node_t;

typedef struct spin_node_table {
    uint32_t my_rank;   /* SPIN_NO_RANK without a table */
    uint32_t num_nodes; /* entries in nodes[] */
    uint32_t reserved[2];
    spin_node_t nodes[]; /* rank k at nodes[k] */
} spin_node_table_t;

#define SPIN_NODE_TABLE ((const spin_node_table_t *)SOFTSPIN_NODE_TABLE_BASE)

/* This NIC's rank, or -1 when it was given no node table. */
static inline int32_t spin_my_rank(void)
{
    uint32_t r = SPIN_NODE_TABLE->my_rank;
    return r == SPIN_NO_RANK ? -1 : (int32_t)r;
}

/* The number of nodes in the cluster (0 without a node table). */
static inline uint32_t spin_num_nodes(void)
{
    return SPIN_NODE_TABLE->num_nodes;
}

/* Node `rank`'s entry, or NULL when there is no such rank. */
static inline const spin_node_t *spin_node(uint32_t rank)
{
    return rank < SPIN_NODE_TABLE->num_nodes ? &SPIN_NODE_TABLE->nodes[rank] : NULL;
}

#endif
