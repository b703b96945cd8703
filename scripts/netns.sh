#!/usr/bin/env bash
# Two network namespaces joined by a veth pair, for the live NIC's tests and
# benchmarks (the NIC side and a peer that sends it traffic). Addresses live
# only inside the namespaces; the host's interfaces are never touched.
#
#   scripts/netns.sh up      create (replacing a stale pair of the same prefix)
#   scripts/netns.sh down    remove everything (idempotent)
#   scripts/netns.sh exec nic|peer CMD...   run CMD in one of the namespaces
#   scripts/netns.sh names   print the names only
#
# SS_NS_PREFIX (default "ss") prefixes every name so parallel runs do not
# collide: namespaces PREFIXnic / PREFIXpeer, veths PREFIX0 / PREFIX1
# (interface names are limited to 15 bytes, so keep the prefix short).
# SS_NET (default 10.77.0) is the /24 both ends live in: .1 nic, .2 peer.
# SS_QUEUES (default 1) is the number of RX/TX queues of each veth end.
set -euo pipefail

prefix=${SS_NS_PREFIX:-ss}
net=${SS_NET:-10.77.0}
ns_nic=${prefix}nic
ns_peer=${prefix}peer
if_nic=${prefix}0
if_peer=${prefix}1
ip_nic=$net.1
ip_peer=$net.2
queues=${SS_QUEUES:-1}

if [ ${#if_nic} -gt 15 ]; then
    echo "netns.sh: SS_NS_PREFIX '$prefix' too long: interface names must be at most 15 bytes" >&2
    exit 2
fi

names() {
    echo "NIC_NS=$ns_nic NIC_IF=$if_nic NIC_IP=$ip_nic QUEUES=$queues"
    echo "PEER_NS=$ns_peer PEER_IF=$if_peer PEER_IP=$ip_peer"
}

down() {
    # Deleting a namespace deletes the veth end inside it, and with it the pair.
    ip netns del "$ns_nic" 2>/dev/null || true
    ip netns del "$ns_peer" 2>/dev/null || true
    ip link del "$if_nic" 2>/dev/null || true
}

up() {
    down
    ip netns add "$ns_nic"
    ip netns add "$ns_peer"
    ip link add "$if_nic" netns "$ns_nic" numrxqueues "$queues" numtxqueues "$queues" \
        type veth peer name "$if_peer" netns "$ns_peer" numrxqueues "$queues" numtxqueues "$queues"
    for side in nic peer; do
        if [ $side = nic ]; then ns=$ns_nic; ifc=$if_nic; addr=$ip_nic; else ns=$ns_peer; ifc=$if_peer; addr=$ip_peer; fi
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$addr/24" dev "$ifc"
        # A real wire carries finished checksums; veth's offload would leave
        # UDP/TCP checksums partial, and a handler's reply would keep them.
        ip netns exec "$ns" ethtool -K "$ifc" tx off >/dev/null
        ip -n "$ns" link set "$ifc" up
    done
    names
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    names) names ;;
    exec)
        shift
        case "${1:-}" in
            nic) ns=$ns_nic ;;
            peer) ns=$ns_peer ;;
            *) echo "usage: netns.sh exec nic|peer CMD..." >&2; exit 2 ;;
        esac
        shift
        exec ip netns exec "$ns" "$@"
        ;;
    *) echo "usage: netns.sh up|down|names|exec nic|peer CMD...  (env SS_NS_PREFIX, SS_NET)" >&2; exit 2 ;;
esac
