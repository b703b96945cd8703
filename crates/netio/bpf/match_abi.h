/* The XDP matcher's ABI: the one place its limits and map layout are
 * defined. FPsPIN's matching engine (seed 000 §3.2.1) as a BPF map.
 *
 * build.rs reads every `#define NAME <integer>` below and generates the Rust
 * constants (softspin_netio::rules::abi), so Rust and C cannot disagree; keep
 * each value a plain decimal or hex integer. */
#ifndef SOFTSPIN_MATCH_ABI_H
#define SOFTSPIN_MATCH_ABI_H

/* Rulesets installed at once (FPsPIN's default engine has 4; ECTX ids fit). */
#define MAX_RULESETS 8
/* Match units per ruleset (FPsPIN: 4 matchers per ruleset). */
#define MAX_UNITS 4
/* Largest unit index: the word at byte 4*1023 ends at byte 4096, the size of
 * the single page an XDP frame lives in; no frame XDP sees reaches further. */
#define MAX_UNIT_INDEX 1023
/* How the units' outputs combine (FPsPIN's MATCH_AND / MATCH_OR). */
#define MATCH_AND 0
#define MATCH_OR 1
/* Entries of the AF_XDP socket map (one per RX queue). */
#define MAX_QUEUES 64
/* Per-CPU counters: [0, MAX_RULESETS) frames matched per ruleset, then: */
#define COUNTER_PASSED 8
#define COUNTER_NO_SOCKET 9
/* IPv4 fragments (see below), matched / left to the kernel; also counted
 * above. */
#define COUNTER_FRAGMENT_MATCHED 10
#define COUNTER_FRAGMENT_PASSED 11
#define N_COUNTERS 12

/* An IPv4 fragment: EtherType IPv4 at bytes 12-13 and a non-zero fragment
 * offset or More Fragments flag in bytes 20-21 (a 16-bit field, big-endian).
 * Only a datagram's first fragment carries its UDP header, so rules see the
 * pieces of one datagram differently; they are counted, not reassembled. */
#define ETHERTYPE_OFFSET 12
#define ETHERTYPE_IPV4 0x0800
#define IPV4_FRAGMENT_OFFSET 20
#define IPV4_FRAGMENT_MASK 0x3fff

#ifndef SOFTSPIN_ABI_NO_STRUCTS
struct match_unit {
    __u32 index; /* word index I: bytes 4I..4I+3 of the frame, big-endian */
    __u32 mask;  /* M */
    __u32 start; /* S */
    __u32 end;   /* E: the unit is true iff S <= (word & M) <= E */
};

struct match_ruleset {
    __u32 n_units; /* 0..MAX_UNITS */
    __u32 mode;    /* MATCH_AND or MATCH_OR */
    struct match_unit units[MAX_UNITS];
};

/* The single entry of the `config` array map. */
struct match_config {
    __u32 n_rulesets; /* 0..MAX_RULESETS; 0: every frame XDP_PASS */
    struct match_ruleset rulesets[MAX_RULESETS];
};

_Static_assert(COUNTER_PASSED == MAX_RULESETS, "counter layout");
_Static_assert(COUNTER_NO_SOCKET == MAX_RULESETS + 1, "counter layout");
_Static_assert(N_COUNTERS == MAX_RULESETS + 4, "counter layout");
_Static_assert(sizeof(struct match_config) == 4 + MAX_RULESETS * (8 + MAX_UNITS * 16),
               "match_config has no padding (Rust mirrors it field by field)");
#endif

#endif
