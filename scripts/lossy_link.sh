#!/usr/bin/env bash
# The lossy link (issue 12; docs/lossy.md): three network namespaces A (the
# sender side), M (the middle) and B (the NIC side), joined by two veth pairs
# A<->M and M<->B. M has no bridge and no addresses: softspin-lossy, run in M,
# copies frames between its two interfaces and drops, duplicates, delays and
# reorders IPv4 frames (this kernel has no netem). A and B share one /24, so
# ARP crosses M untouched. Conventions as scripts/netns.sh.
#
#   scripts/lossy_link.sh up      create (replacing a stale set of the same prefix)
#   scripts/lossy_link.sh down    remove everything (idempotent)
#   scripts/lossy_link.sh names   print the names only
#   scripts/lossy_link.sh exec a|m|b CMD...   run CMD in one of the namespaces
#   scripts/lossy_link.sh fwd [softspin-lossy flags]   run the forwarder in M
#
# SS_NS_PREFIX (default "sl") prefixes every name: namespaces PREFIXa,
# PREFIXm, PREFIXb; veths PREFIXa0 (in A) - PREFIXma (in M) and PREFIXmb (in
# M) - PREFIXb0 (in B). SS_NET (default 10.78.0) is the /24: .1 is B (the NIC
# side, as in netns.sh), .2 is A. SS_LOSSY_BIN names the forwarder binary
# (default target/release/softspin-lossy).
set -euo pipefail

prefix=${SS_NS_PREFIX:-sl}
net=${SS_NET:-10.78.0}
ns_a=${prefix}a
ns_m=${prefix}m
ns_b=${prefix}b
if_a=${prefix}a0
if_ma=${prefix}ma
if_mb=${prefix}mb
if_b=${prefix}b0
ip_b=$net.1
ip_a=$net.2
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SS_LOSSY_BIN:-$root/target/release/softspin-lossy}

if [ ${#if_a} -gt 15 ]; then
    echo "lossy_link.sh: SS_NS_PREFIX '$prefix' too long: interface names must be at most 15 bytes" >&2
    exit 2
fi

names() {
    echo "A_NS=$ns_a A_IF=$if_a A_IP=$ip_a"
    echo "M_NS=$ns_m M_IF_A=$if_ma M_IF_B=$if_mb"
    echo "B_NS=$ns_b B_IF=$if_b B_IP=$ip_b"
}

down() {
    # Deleting a namespace deletes the veth ends inside it, and with them the pairs.
    for ns in "$ns_a" "$ns_m" "$ns_b"; do ip netns del "$ns" 2>/dev/null || true; done
    ip link del "$if_a" 2>/dev/null || true
    ip link del "$if_b" 2>/dev/null || true
}

# quiet NS IF: no IPv6 (its autoconfiguration would put frames the tests do
# not expect on the link), finished checksums, no segmentation offloads (M
# must see wire-sized frames with real checksums, as a switch would).
quiet() {
    ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip netns exec "$1" ethtool -K "$2" tx off >/dev/null
    ip netns exec "$1" ethtool -K "$2" tso off gso off gro off >/dev/null 2>&1 || true
}

up() {
    down
    for ns in "$ns_a" "$ns_m" "$ns_b"; do
        ip netns add "$ns"
        ip -n "$ns" link set lo up
    done
    ip link add "$if_a" netns "$ns_a" type veth peer name "$if_ma" netns "$ns_m"
    ip link add "$if_b" netns "$ns_b" type veth peer name "$if_mb" netns "$ns_m"
    quiet "$ns_a" "$if_a"
    quiet "$ns_m" "$if_ma"
    quiet "$ns_m" "$if_mb"
    quiet "$ns_b" "$if_b"
    ip -n "$ns_a" addr add "$ip_a/24" dev "$if_a"
    ip -n "$ns_b" addr add "$ip_b/24" dev "$if_b"
    ip -n "$ns_a" link set "$if_a" up
    ip -n "$ns_m" link set "$if_ma" up
    ip -n "$ns_m" link set "$if_mb" up
    ip -n "$ns_b" link set "$if_b" up
    names
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    names) names ;;
    exec)
        shift
        case "${1:-}" in
            a) ns=$ns_a ;;
            m) ns=$ns_m ;;
            b) ns=$ns_b ;;
            *) echo "usage: lossy_link.sh exec a|m|b CMD..." >&2; exit 2 ;;
        esac
        shift
        exec ip netns exec "$ns" "$@"
        ;;
    fwd)
        shift
        [ -x "$bin" ] || { echo "lossy_link.sh: $bin missing: cargo build --release -p softspin-lossy" >&2; exit 2; }
        exec ip netns exec "$ns_m" "$bin" --a "$if_ma" --b "$if_mb" "$@"
        ;;
    *) echo "usage: lossy_link.sh up|down|names|exec a|m|b CMD...|fwd FLAGS...  (env SS_NS_PREFIX, SS_NET)" >&2; exit 2 ;;
esac
