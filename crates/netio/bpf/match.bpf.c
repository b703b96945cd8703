/* FPsPIN's packet matching engine (seed 000 §3.2.1, pspin_pkt_match) as an
 * XDP program: the first installed ruleset whose units match sends the frame
 * to the AF_XDP socket of its RX queue; frames no ruleset matches go to the
 * kernel stack untouched (the bypass). End-of-message and message id are not
 * computed here: userspace recomputes them on the received frame with the
 * Rust matcher (crates/netio/src/rules.rs), which this program must agree
 * with (tests/matcher.rs runs both on random frames and rules). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "match_abi.h"

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct match_config);
} config SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, N_COUNTERS);
    __type(key, __u32);
    __type(value, __u64);
} counters SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, MAX_QUEUES);
    __type(key, __u32);
    __type(value, __u32);
} xsks SEC(".maps");

static __always_inline void count(__u32 which)
{
    __u64 *c = bpf_map_lookup_elem(&counters, &which);
    if (c)
        *c += 1;
}

/* S <= (be32 word at byte 4*index & M) <= E; a word not entirely inside the
 * frame makes the unit false (as in the Rust matcher). */
static __always_inline int unit_true(const struct match_unit *u, void *data, void *data_end)
{
    __u32 index = u->index;
    if (index > MAX_UNIT_INDEX)
        return 0;
    /* Masking keeps the offset provably bounded for the verifier. */
    const __u8 *p = (const __u8 *)data + ((index & 0x3ff) << 2);
    if ((const void *)(p + 4) > data_end)
        return 0;
    __u32 word = ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | (__u32)p[3];
    __u32 v = word & u->mask;
    return u->start <= v && v <= u->end;
}

/* See match_abi.h; the Rust twin is rules::is_ipv4_fragment. */
static __always_inline int is_ipv4_fragment(void *data, void *data_end)
{
    const __u8 *p = data;
    if ((const void *)(p + IPV4_FRAGMENT_OFFSET + 2) > data_end)
        return 0;
    __u32 type = ((__u32)p[ETHERTYPE_OFFSET] << 8) | p[ETHERTYPE_OFFSET + 1];
    __u32 frag = ((__u32)p[IPV4_FRAGMENT_OFFSET] << 8) | p[IPV4_FRAGMENT_OFFSET + 1];
    return type == ETHERTYPE_IPV4 && (frag & IPV4_FRAGMENT_MASK) != 0;
}

static __always_inline int ruleset_matches(const struct match_ruleset *rs, void *data,
                                           void *data_end)
{
    __u32 n = rs->n_units;
    int is_or = rs->mode == MATCH_OR;
    /* and: true until a unit is false (no units: true); or: the reverse. */
    int result = !is_or;
    /* Bounded loops (kernel >= 5.3): the verifier walks each iteration. */
    for (int i = 0; i < MAX_UNITS; i++) {
        if ((__u32)i >= n)
            break;
        int t = unit_true(&rs->units[i], data, data_end);
        if (is_or && t)
            return 1;
        if (!is_or && !t)
            return 0;
    }
    return result;
}

SEC("xdp")
int softspin_match(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    __u32 zero = 0;
    struct match_config *cfg = bpf_map_lookup_elem(&config, &zero);
    if (!cfg) {
        count(COUNTER_PASSED);
        return XDP_PASS;
    }
    __u32 n = cfg->n_rulesets;
    int fragment = is_ipv4_fragment(data, data_end);
    for (int r = 0; r < MAX_RULESETS; r++) {
        if ((__u32)r >= n)
            break;
        if (ruleset_matches(&cfg->rulesets[r], data, data_end)) {
            count(r);
            if (fragment)
                count(COUNTER_FRAGMENT_MATCHED);
            /* XDP_PASS as the fallback: a queue without a registered socket
             * hands its frames to the kernel instead of dropping them; counted
             * so the loss to userspace is visible. */
            long act = bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
            if (act != XDP_REDIRECT)
                count(COUNTER_NO_SOCKET);
            return act;
        }
    }
    count(COUNTER_PASSED);
    if (fragment)
        count(COUNTER_FRAGMENT_PASSED);
    return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
