/*
 * softspin.h - the C API of softspin (libsoftspin): offload sPIN handlers to
 * a sPIN NIC (simulated, or live on a network interface), feed it traffic,
 * collect what the handlers did.
 * A thin, stable C ABI over the Rust crate softspin-host: the same model as
 * the Rust and Python APIs.
 *
 *     ss_nic *nic;        ss_open("pspin", &nic);
 *     ss_image *img;      ss_image_load(nic, "handler.elf", &img);
 *     ss_host_window w;   ss_host_lend(nic, buf, sizeof buf, &w);
 *     ss_ectx_options o;  ss_ectx_options_init(&o);
 *     o.ph = "my_ph";     o.host_window = w;
 *     ss_ectx e;          ss_install(nic, img, &o, &e);  ss_activate(nic, e);
 *     ss_send_message(nic, e, 0, data, len, 1024);
 *     ss_run_until_idle(nic);
 *     ...                 buf holds what handlers DMAed; ss_next_event, ss_get_report
 *     ss_image_free(img); ss_close(nic);
 *
 * The same program runs on a real interface by opening the NIC with
 * ss_nic_attach("eth0", &attach_opts, &nic) instead of ss_open (handlers
 * then get Ethernet frames; ECTXs name their frames with
 * ss_ectx_options.match_specs such as "udp:7"), and ss_run_live(nic, 0)
 * until ss_stop(nic) from a SIGINT handler.
 *
 * Conventions:
 * - Every function returns int: SS_OK (0) or a negative SS_E* code (by
 *   category), except the four that return a string or a number
 *   (ss_last_error, ss_strerror, ss_version, ss_abi_version).
 * - After a failure, ss_last_error() describes it (per thread).
 * - A NULL pointer where one is required gives SS_EINVAL. Nothing aborts
 *   the process: an internal bug gives SS_EINTERNAL.
 * - Ownership: an ss_nic (ss_open*) is freed by ss_close, an ss_image by
 *   ss_image_free. Everything else the library returns is either copied
 *   into caller memory, or borrowed from the library until a later call
 *   named where it is returned (ss_event's pointers, ss_last_error). The
 *   library never frees caller memory; a buffer lent with ss_host_lend
 *   stays the caller's.
 * - Out parameters are written on success only; handle out-parameters
 *   (ss_nic **, ss_image **) are set to NULL on failure.
 * - A NIC is not thread-safe: one thread at a time per NIC.
 * - Compile and link with `pkg-config --cflags --libs softspin`
 *   (scripts/c-env.sh writes build/c/softspin.pc).
 */


#ifndef SOFTSPIN_H
#define SOFTSPIN_H

/* Generated from crates/host-c/src/lib.rs by cbindgen (crates/host-c/build.rs): do not edit. */

#include <stddef.h>
#include <stdint.h>

/**
 * Version of this ABI: bumped when a struct or signature changes.
 */
#define SS_ABI_VERSION 5

/**
 * ECTXs PsPIN's generic driver splits its memory between.
 */
#define SS_GDRIVER_EC_MAX 2

/**
 * Its L2 handler memory for all ECTXs, bytes.
 */
#define SS_GDRIVER_L2_SIZE 1048576

/**
 * Its host memory for all ECTXs, bytes.
 */
#define SS_GDRIVER_HOST_SIZE 1073741824

/**
 * Its scratchpad per cluster for all ECTXs, bytes.
 */
#define SS_GDRIVER_SCRATCHPAD_SIZE 819200

/**
 * Frames start at the IPv4 header, PsPIN's host-order layout (28 header
 * bytes before the UDP payload). The default.
 */
#define SS_FRAME_IP 0

/**
 * Ethernet II + IPv4 + UDP in wire format (42 header bytes; FPsPIN).
 */
#define SS_FRAME_ETH 1

/**
 * Generator payload: all zero bytes.
 */
#define SS_PAYLOAD_ZERO 0

/**
 * Generator payload: byte i of packet number n is (i + 7 n) mod 256.
 */
#define SS_PAYLOAD_SEQUENCE 1

/**
 * Generator payload: deterministic pseudo-random bytes from `seed`.
 */
#define SS_PAYLOAD_RANDOM 2

/**
 * ss_next_event found no event.
 */
#define SS_EVENT_NONE 0

/**
 * A handler sent a packet (spin_send_packet, spin_rdma_put).
 */
#define SS_EVENT_OUTBOUND 1

/**
 * A handler's 8-byte host-direct write (spin_write_to_host) landed.
 */
#define SS_EVENT_HOST_WRITE 2

/**
 * A message's handlers all finished.
 */
#define SS_EVENT_MESSAGE_DONE 3

/**
 * A handler faulted, hit its watchdog or misbehaved; it ended alone.
 */
#define SS_EVENT_HANDLER_ERROR 4

/**
 * `value` handler errors happened here whose details were dropped: more
 * than SS_PENDING_ERRORS_FIRST came between two batches of events, and only
 * the first of them and the latest SS_PENDING_ERRORS_LATEST are kept (the
 * report's counts include them all).
 */
#define SS_EVENT_ERRORS_DROPPED 5

/**
 * Handler errors kept in detail per batch of events: the first ...
 */
#define SS_PENDING_ERRORS_FIRST 1000

/**
 * ... and the latest.
 */
#define SS_PENDING_ERRORS_LATEST 100

/**
 * ss_event.present bit: `pc` holds a program counter.
 */
#define SS_HAS_PC 1

/**
 * ss_event.present bit: `addr` holds a faulting or offending address.
 */
#define SS_HAS_ADDR 2

/**
 * ss_event.present bit: `hpu` holds an HPU index.
 */
#define SS_HAS_HPU 4

/**
 * ss_attach_options.mode: the XDP matching engine on the interface and
 * AF_XDP sockets (needs root: CAP_NET_ADMIN, CAP_BPF). Unmatched frames go
 * to the kernel untouched.
 */
#define SS_MODE_XDP 0

/**
 * ss_attach_options.mode: the fallback without XDP or root: UDP sockets
 * bound to the ports of the `udp:` rules; handlers get synthesised
 * Ethernet/IPv4/UDP frames, and replies leave through the sockets.
 */
#define SS_MODE_SOCKET 1

/**
 * ss_slmp_options.sync: no segment asks for an ACK (delivery unconfirmed).
 */
#define SS_SLMP_SYNC_NONE 0

/**
 * ss_slmp_options.sync: the first and last segment of each message do.
 */
#define SS_SLMP_SYNC_MSG 1

/**
 * ss_slmp_options.sync: every segment is acknowledged or retransmitted
 * (the default).
 */
#define SS_SLMP_SYNC_ALL 2

/**
 * Bytes of ss_live_drop.cause, the NUL included (longer names are cut).
 */
#define SS_DROP_CAUSE_MAX 48

/**
 * Bytes a notification carries inline (SPIN_NOTIFY_INLINE_MAX).
 */
#define SS_NOTIFY_INLINE_MAX 64

/**
 * Status codes: every function returns SS_OK or one negative code per
 * kind of error (softspin_host::ErrorKind, one to one), or SS_EINTERNAL.
 */
typedef enum ss_status {
    /**
     * Success.
     */
    SS_OK = 0,
    /**
     * Invalid argument: a NULL pointer where one is required, a string that
     * is not UTF-8, a value out of range, a notification that cannot be
     * answered.
     */
    SS_EINVAL = -1,
    /**
     * Unknown profile name, or an invalid NIC configuration file.
     */
    SS_ECONFIG = -2,
    /**
     * A file could not be read (handler image, configuration, trace, pcap).
     */
    SS_EIO = -3,
    /**
     * Not a usable handler image (not an RV32 little-endian ELF, bad
     * segments).
     */
    SS_EIMAGE = -4,
    /**
     * A symbol is not in the image (ss_image_symbol, or a handler named in
     * ss_install).
     */
    SS_ESYMBOL = -5,
    /**
     * The ECTX's code or handler memory overlaps an installed ECTX (e.g. the
     * same image installed twice; link the second with `softspin build
     * --code-base/--data-base`).
     */
    SS_EOVERLAP = -6,
    /**
     * NIC memory: a range that is not NIC memory, an ss_nic_alloc that does
     * not fit, an image or scratchpad outside its region.
     */
    SS_ENICMEM = -7,
    /**
     * Host memory: a range outside every host window, an empty window, a
     * window this NIC did not make (or changed since).
     */
    SS_EHOST = -8,
    /**
     * The ECTX is in the wrong state: already active, not active, or still
     * has messages in flight.
     */
    SS_ESTATE = -9,
    /**
     * No such ECTX: never installed, or uninstalled.
     */
    SS_ENOECTX = -10,
    /**
     * Any other install error: no handler named, image built for another
     * cluster count, undecodable code.
     */
    SS_EECTX = -11,
    /**
     * Bad traffic: an invalid generator or frame parameter, a malformed
     * trace or pcap file.
     */
    SS_ETRAFFIC = -12,
    /**
     * The simulation refused a packet (larger than a packet-buffer slot,
     * too short to match an ECTX).
     */
    SS_ESIM = -13,
    /**
     * A size, length or time beyond a documented limit (a host window over
     * 4 GiB - 1, host memory beyond the NIC's cap, a run past the end of
     * NIC time), or host memory that could not be allocated for it. The
     * message names the argument and the limit; the NIC stays usable.
     */
    SS_ELIMIT = -14,
    /**
     * Building a handler image failed.
     */
    SS_EBUILD = -15,
    /**
     * The live NIC: no such interface, not permitted (needs root; or use
     * socket mode), an XDP program already on the interface, XDP
     * unsupported, bad rules, a socket error.
     */
    SS_ENET = -16,
    /**
     * Internal error: a bug in softspin, caught at the API boundary. The NIC
     * it happened on answers every later call with SS_EINTERNAL; ss_close it.
     */
    SS_EINTERNAL = -99,
} ss_status;

/**
 * Why a handler (or a message) failed: ss_event.error_cause of an
 * SS_EVENT_HANDLER_ERROR (one per softspin_host::ErrorCause).
 */
typedef enum ss_error_cause {
    /**
     * Not a handler error.
     */
    SS_CAUSE_NONE = 0,
    /**
     * Load from an address no window covers.
     */
    SS_CAUSE_LOAD_ACCESS = 1,
    /**
     * Store (or AMO) to an address no window covers.
     */
    SS_CAUSE_STORE_ACCESS = 2,
    /**
     * Load from memory without read permission.
     */
    SS_CAUSE_LOAD_DENIED = 3,
    /**
     * Store to read-only memory.
     */
    SS_CAUSE_STORE_DENIED = 4,
    /**
     * Instruction fetch from memory that is not executable.
     */
    SS_CAUSE_FETCH_ACCESS = 5,
    /**
     * Misaligned atomic access.
     */
    SS_CAUSE_MISALIGNED = 6,
    /**
     * Undecodable or privileged instruction.
     */
    SS_CAUSE_ILLEGAL_INSTRUCTION = 7,
    /**
     * `ebreak`.
     */
    SS_CAUSE_BREAKPOINT = 8,
    /**
     * The handler's instruction budget ran out.
     */
    SS_CAUSE_WATCHDOG = 9,
    /**
     * `ecall` with an unknown service number.
     */
    SS_CAUSE_UNKNOWN_SERVICE = 10,
    /**
     * A runtime service rejected the request.
     */
    SS_CAUSE_SERVICE_FAULT = 11,
    /**
     * No packet of the message came within the ECTX's message timeout.
     */
    SS_CAUSE_MESSAGE_TIMEOUT = 12,
    /**
     * The handler waited (command, notification) beyond the wait limit.
     */
    SS_CAUSE_WAIT_TIMEOUT = 13,
    /**
     * `assert`, `abort()` or `exit(status != 0)`; ss_event.value holds the
     * status (as int64_t).
     */
    SS_CAUSE_ABORTED = 14,
    /**
     * Rejected command: host DMA outside the ECTX's host window.
     */
    SS_CAUSE_REJECTED_HOST_DMA_WINDOW = 20,
    /**
     * Rejected command: host-direct write outside the host window.
     */
    SS_CAUSE_REJECTED_HOST_WRITE_WINDOW = 21,
    /**
     * Rejected command: NIC buffer outside the task's memory.
     */
    SS_CAUSE_REJECTED_NIC_ACCESS = 22,
    /**
     * Rejected command: send or RDMA put larger than the packet slot.
     */
    SS_CAUSE_REJECTED_SEND_TOO_LARGE = 23,
    /**
     * Rejected command: zero-length cluster DMA.
     */
    SS_CAUSE_REJECTED_EMPTY_DMA = 24,
    /**
     * Rejected command: write to a descriptor other than 1 or 2.
     */
    SS_CAUSE_REJECTED_BAD_FD = 25,
    /**
     * Rejected command: counter index beyond counters_per_ectx.
     */
    SS_CAUSE_REJECTED_COUNTER_INDEX = 26,
    /**
     * Rejected command: notification id not owned by the task.
     */
    SS_CAUSE_REJECTED_NOTIFY_ID = 27,
    /**
     * Rejected command: notification longer than its inline limit.
     */
    SS_CAUSE_REJECTED_NOTIFY_TOO_LONG = 28,
} ss_error_cause;

/**
 * The operation of an ss_rma_request (docs/rma.md, docs/host-interface.md "RMA").
 */
typedef enum ss_rma_op {
    /**
     * Write `len` bytes of the RMA ECTX's host window at `local` to the
     * remote window.
     */
    SS_RMA_PUT = 1,
    /**
     * Read `len` bytes of the remote window into the host window at `local`.
     */
    SS_RMA_GET = 2,
    /**
     * Fetch-and-add `operand` to the `width`-byte word; completion value =
     * the old word.
     */
    SS_RMA_FETCH_ADD = 3,
    /**
     * Compare-and-swap: `operand` is the compare value, `swap` the new one;
     * completion value = the old word.
     */
    SS_RMA_CAS = 4,
} ss_rma_op;

/**
 * A connection to a `softspin nic` process's control socket, with the host
 * memory it shares mapped (ss_client_connect). One thread at a time.
 */
typedef struct ss_client ss_client;

/**
 * A loaded handler image. Opaque; from ss_image_load or
 * ss_image_from_bytes, released by ss_image_free (any time: an installed
 * ECTX keeps its own copy).
 */
typedef struct ss_image ss_image;

/**
 * A NIC: the simulated PsPIN NIC (ss_open, ss_open_config_file) or one
 * attached to a network interface (ss_nic_attach). Opaque; released by
 * ss_close. Not thread-safe: use one NIC from one thread at a time (only
 * ss_stop may be called from anywhere, signal handlers included).
 */
typedef struct ss_nic ss_nic;

/**
 * The NIC's shape (ss_nic_get_info).
 */
typedef struct ss_nic_info {
    /**
     * Profile name, NUL-terminated ("pspin", "fpspin").
     */
    char profile[16];
    /**
     * Clusters (NB_CLUSTERS of images built for this NIC).
     */
    uint32_t clusters;
    /**
     * HPUs per cluster.
     */
    uint32_t hpus_per_cluster;
    /**
     * HPUs in all (valid indexes for ss_hpu_stdout).
     */
    uint32_t hpu_count;
    /**
     * HPU clock in MHz.
     */
    uint32_t clock_mhz;
    /**
     * Largest packet, bytes (a packet-buffer slot).
     */
    uint32_t pkt_slot_size;
    /**
     * L2 handler memory, bytes.
     */
    uint32_t l2_handler_size;
    /**
     * Inbound line rate in Gbit/s.
     */
    double line_rate_gbps;
} ss_nic_info;

/**
 * One node of a cluster's node table (ss_load_nodes).
 */
typedef struct ss_node {
    uint32_t rank;
    /**
     * IPv4 address, in network byte order (as on the wire).
     */
    uint8_t ipv4[4];
    /**
     * MAC address, as on the wire.
     */
    uint8_t mac[6];
    /**
     * The UDP port its NIC serves (host byte order).
     */
    uint16_t udp_port;
    /**
     * Its interface, NUL-terminated (at most 15 bytes).
     */
    char iface[16];
    /**
     * Its network namespace, NUL-terminated; empty on real machines
     * (truncated to 63 bytes).
     */
    char netns[64];
} ss_node;

/**
 * How ss_nic_attach opens a NIC on an interface. Start from
 * ss_attach_options_init. Strings are copied; they need only live during
 * the call.
 */
typedef struct ss_attach_options {
    /**
     * SS_MODE_XDP (default; root) or SS_MODE_SOCKET.
     */
    uint32_t mode;
    /**
     * NIC profile, "pspin" or "fpspin"; NULL = "fpspin" (handlers take
     * Ethernet frames as the wire gives them). Build handler images for it
     * (`softspin build --profile fpspin`).
     */
    const char *profile;
    /**
     * A NIC configuration file (docs/sim.md) instead of `profile`; NULL =
     * none. Setting both is SS_EINVAL.
     */
    const char *config_path;
    /**
     * Longest ss_wait_notifications waits for the wire before returning
     * none (a live NIC never runs out of work for good), in ns.
     * ss_attach_options_init sets 10 s; 0 = do not wait.
     */
    uint64_t wait_timeout_ns;
} ss_attach_options;

/**
 * What a live NIC did on the wire (ss_get_live_stats). Drops by cause come
 * from ss_live_drops; the engine's own (packet buffer full) are in
 * ss_report.drops.
 */
typedef struct ss_live_stats {
    /**
     * Frames the matching engine saw (matched + passed to the kernel).
     */
    uint64_t rx_frames;
    /**
     * Frames that matched an active ECTX's ruleset.
     */
    uint64_t matched;
    /**
     * Frames left to the kernel's network stack (matched no ruleset).
     */
    uint64_t passed_to_kernel;
    /**
     * Frames handlers sent that went to the wire.
     */
    uint64_t tx_frames;
    /**
     * Frames lost on the way in or out, all causes (ss_live_drops).
     */
    uint64_t drops;
    /**
     * Wall-clock seconds since ss_nic_attach.
     */
    double wall_s;
} ss_live_stats;

/**
 * A snapshot of a live NIC's progress (ss_get_live_status): what
 * `softspin nic --progress` shows (docs/live.md, "Live status"). Every
 * count is a total since ss_nic_attach.
 */
typedef struct ss_live_status {
    /**
     * The wire, as in ss_live_stats.
     */
    uint64_t rx_frames;
    uint64_t matched;
    uint64_t passed_to_kernel;
    uint64_t tx_frames;
    /**
     * Frames dropped, all causes: the port's (ss_live_drops) and the
     * engine's (packet buffer full, no ECTX).
     */
    uint64_t drops;
    /**
     * Frames taken from the wire whose handlers have not finished.
     */
    uint64_t unprocessed;
    /**
     * Frames whose handlers all finished, and handler invocations.
     */
    uint64_t packets;
    uint64_t invocations;
    /**
     * Handler errors of every cause (message timeouts included).
     */
    uint64_t errors;
    /**
     * HPUs of the NIC and those running a task now.
     */
    uint32_t hpus;
    uint32_t hpus_busy;
    /**
     * Busy time of all HPUs (ps of NIC time): the occupancy between two
     * snapshots is its growth over hpus x the growth of nic_time_ps.
     */
    uint64_t hpu_busy_ps;
    uint64_t nic_time_ps;
    /**
     * Wall-clock seconds since ss_nic_attach.
     */
    double wall_s;
} ss_live_status;

/**
 * One cause of lost frames on a live NIC (ss_live_drops).
 */
typedef struct ss_live_drop {
    /**
     * The cause, NUL-terminated ("rx_ring_full", "tx_not_udp",
     * "larger_than_packet_slot", ...).
     */
    char cause[SS_DROP_CAUSE_MAX];
    /**
     * Frames lost to it.
     */
    uint64_t count;
} ss_live_drop;

/**
 * How ss_slmp_send sends. Start from ss_slmp_options_init.
 */
typedef struct ss_slmp_options {
    /**
     * Flow-control window in packets (1..=65536); 0 = adaptive (AIMD).
     */
    uint32_t window;
    /**
     * SS_SLMP_SYNC_ALL (default), SS_SLMP_SYNC_MSG or SS_SLMP_SYNC_NONE.
     */
    uint32_t sync;
    /**
     * Payload bytes per segment; the default, 1462, fits a 1500-byte MTU.
     */
    uint32_t segment;
    /**
     * Message id of the first message (the receiver's slot is id % 16).
     */
    uint32_t first_msg_id;
    /**
     * Give up when no new ACK arrived for this long, in ns (default 10 s).
     */
    uint64_t give_up_ns;
} ss_slmp_options;

/**
 * What ss_slmp_send did (also filled when it gave up).
 */
typedef struct ss_slmp_stats {
    uint64_t messages;
    /**
     * Message bytes (payload, not headers).
     */
    uint64_t bytes;
    uint64_t segments;
    /**
     * Every data packet sent, retransmissions included.
     */
    uint64_t packets_sent;
    uint64_t retransmitted;
    /**
     * Retransmissions after a retransmission timeout.
     */
    uint64_t timeouts;
    uint64_t acks_received;
    /**
     * ACKs for already acknowledged segments (duplicates on the way).
     */
    uint64_t duplicate_acks;
    uint64_t rtt_samples;
    double rtt_min_us;
    double rtt_p50_us;
    double rtt_p99_us;
    uint32_t window_final;
    uint32_t window_max;
    uint64_t window_decreases;
    double elapsed_s;
    /**
     * Message bytes per second of elapsed time, in bit/s.
     */
    double goodput_bps;
    /**
     * 1 when every segment was acknowledged (always with SS_SLMP_SYNC_ALL).
     */
    uint32_t delivery_confirmed;
} ss_slmp_stats;

/**
 * A host-memory window lent to the NIC: handlers see it at `base`, a 64-bit
 * host address (task->host_mem_high/low), `size` bytes long.
 */
typedef struct ss_host_window {
    /**
     * Host address of the first byte.
     */
    uint64_t base;
    /**
     * Bytes in the window.
     */
    uint64_t size;
} ss_host_window;

/**
 * How to install an ECTX. Start from ss_ectx_options_init (it sets the
 * defaults), then set what you need. Strings are copied; the struct and its
 * strings need only live during the ss_install call.
 */
typedef struct ss_ectx_options {
    /**
     * Name in reports and error messages; NULL = "ectxN".
     */
    const char *name;
    /**
     * Header handler symbol; NULL = none.
     */
    const char *hh;
    /**
     * Payload handler symbol; NULL = none.
     */
    const char *ph;
    /**
     * Completion handler symbol; NULL = none. At least one of hh/ph/th.
     */
    const char *th;
    /**
     * Handler memory bytes from the image's data start; room beyond the
     * image's data is what ss_nic_alloc hands out. 0 = the image's data only.
     */
    uint32_t handler_mem_size;
    /**
     * Bytes of each packet copied to L1 before a handler runs; 0 = all.
     */
    uint32_t l1_copy;
    /**
     * The host window handlers may DMA to/from, exactly as
     * ss_host_window_create or ss_host_lend returned it on this NIC; size 0 =
     * none.
     */
    struct ss_host_window host_window;
    /**
     * Scratchpad bytes on each cluster (scratchpad_len entries; missing
     * clusters get none). May be NULL when scratchpad_len is 0.
     */
    const uint32_t *scratchpad;
    /**
     * Entries in `scratchpad`.
     */
    size_t scratchpad_len;
    /**
     * Instruction budget of one handler invocation; 0 = the default
     * (1,000,000).
     */
    uint64_t watchdog;
    /**
     * A message with no packet for this many ns is reset; 0 = never.
     * ss_ectx_options_init sets the default, 1 ms.
     */
    uint64_t msg_timeout_ns;
    /**
     * Take only UDP packets to this destination port; 0 = every packet.
     * Also the port ss_send_message addresses (0: 9330). On a live NIC it
     * stands for the ruleset "udp:PORT" when no other rules are given.
     */
    uint16_t udp_dst_port;
    /**
     * Live NIC (ABI 3): matching-engine rulesets as `--match` shortcuts
     * ("udp:PORT", "icmp", "ipv4", "all", "slmp[:PORT]"), `match_specs_len`
     * strings; may be NULL when match_specs_len is 0. They select which frames
     * reach this ECTX (seed 000 §3.2.1); the first ruleset that matches a
     * frame wins, in install order. A live ECTX needs at least one ruleset
     * (from here, the rules below, or udp_dst_port).
     */
    const char *const *match_specs;
    /**
     * Entries in `match_specs`.
     */
    size_t match_specs_len;
    /**
     * Live NIC (ABI 3): a TOML rules file (docs/rules.md) whose rulesets
     * also feed this ECTX: those without an `ectx` field, and those whose
     * `ectx` is this ECTX's name. NULL = none.
     */
    const char *rules_file;
    /**
     * Live NIC (ABI 3): the same as `rules_file`, as TOML text. NULL = none.
     */
    const char *rules_toml;
    /**
     * ABI 4: PsPIN's handler memory, a region of its own at this L2
     * address (handler_mem_size bytes, at least 64) that task->handler_mem
     * points at. The image's data then lies outside it, installed once and
     * shared by every ECTX of the same image, so one image can serve
     * several ECTXs, each with its own handler memory. 0 = softspin's
     * layout: handler memory starts at the image's data.
     */
    uint32_t handler_mem_addr;
    /**
     * ABI 5: put the RMA transport block (DiAD's reliability layer,
     * docs/rma.md "Reliability") in front of this ECTX, as node `rma_rank`
     * (0..=65535) of a node table; its frames on RMA's UDP port pass
     * through it. -1 (ss_ectx_options_init) = no transport.
     */
    int32_t rma_rank;
} ss_ectx_options;

/**
 * An installed execution context (ECTX), as returned by ss_install. Handles
 * are never reused within one NIC.
 */
typedef uint32_t ss_ectx;

/**
 * Parameters of the synthetic traffic generator (ss_feed_generator).
 * Start from ss_gen_config_init.
 */
typedef struct ss_gen_config {
    /**
     * Number of messages (>= 1).
     */
    uint32_t messages;
    /**
     * Packets per message (>= 1).
     */
    uint32_t packets_per_message;
    /**
     * Frame bytes, headers included.
     */
    uint32_t size;
    /**
     * Messages in flight, their packets interleaved round-robin (>= 1).
     */
    uint32_t concurrent;
    /**
     * Line rate in Gbit/s; INFINITY = every packet at time 0.
     */
    double rate_gbps;
    /**
     * SS_FRAME_IP or SS_FRAME_ETH.
     */
    uint32_t frame;
    /**
     * SS_PAYLOAD_ZERO, SS_PAYLOAD_SEQUENCE or SS_PAYLOAD_RANDOM.
     */
    uint32_t payload;
    /**
     * Seed of SS_PAYLOAD_RANDOM.
     */
    uint64_t seed;
    /**
     * Message id of the first message (the next ones count up).
     */
    uint32_t first_msg_id;
    /**
     * UDP source port.
     */
    uint16_t udp_src_port;
    /**
     * UDP destination port.
     */
    uint16_t udp_dst_port;
    /**
     * IPv4 source address, most significant byte first (10.0.0.1 = {10,0,0,1}).
     */
    uint8_t src_ip[4];
    /**
     * IPv4 destination address, most significant byte first.
     */
    uint8_t dst_ip[4];
} ss_gen_config;

/**
 * One thing the NIC did (ss_next_event). Fields not listed for a kind are 0
 * or NULL. Pointers point into the NIC and stay valid until the next
 * ss_next_event or ss_close on that NIC: copy what you keep.
 */
typedef struct ss_event {
    /**
     * SS_EVENT_*; SS_EVENT_NONE if there was no event.
     */
    uint32_t kind;
    /**
     * The ECTX whose handler caused it (the handle ss_install returned,
     * even if uninstalled since).
     */
    ss_ectx ectx;
    /**
     * NIC time in picoseconds (handler errors: at ns resolution).
     */
    uint64_t time_ps;
    /**
     * SS_EVENT_MESSAGE_DONE, SS_EVENT_HANDLER_ERROR: the message id.
     */
    uint32_t msg_id;
    /**
     * SS_EVENT_OUTBOUND: RDMA put destination (0 for spin_send_packet).
     */
    uint32_t dest;
    /**
     * SS_EVENT_OUTBOUND: the frame the handler sent.
     */
    const uint8_t *data;
    /**
     * SS_EVENT_OUTBOUND: bytes at `data`.
     */
    size_t data_len;
    /**
     * SS_EVENT_HOST_WRITE: host address written; SS_EVENT_HANDLER_ERROR: the
     * faulting or offending address (if `present` has SS_HAS_ADDR).
     */
    uint64_t addr;
    /**
     * SS_EVENT_HOST_WRITE: the 64-bit value written (little-endian in host
     * memory); SS_EVENT_HANDLER_ERROR with SS_CAUSE_ABORTED: the status;
     * SS_EVENT_ERRORS_DROPPED: how many errors.
     */
    uint64_t value;
    /**
     * SS_EVENT_HANDLER_ERROR: program counter (if `present` has SS_HAS_PC).
     */
    uint32_t pc;
    /**
     * SS_EVENT_HANDLER_ERROR: global index of the HPU (if `present` has
     * SS_HAS_HPU).
     */
    uint32_t hpu;
    /**
     * SS_EVENT_HANDLER_ERROR: which of `pc`, `addr`, `hpu` apply (SS_HAS_*
     * bits; a message timeout has none of them).
     */
    uint32_t present;
    /**
     * SS_EVENT_HANDLER_ERROR: the handler's symbol; NULL for a
     * message-level error (message timeout).
     */
    const char *handler;
    /**
     * SS_EVENT_HANDLER_ERROR: more about it (an abort's status and assert
     * text, a rejected command's limit); NULL if nothing more.
     */
    const char *detail;
    /**
     * SS_EVENT_HANDLER_ERROR: what went wrong, in words.
     */
    const char *cause;
    /**
     * SS_EVENT_HANDLER_ERROR: what went wrong, an ss_error_cause
     * (SS_CAUSE_NONE for other events).
     */
    uint32_t error_cause;
    /**
     * SS_EVENT_HANDLER_ERROR: the ECTX's name.
     */
    const char *ectx_name;
} ss_event;

/**
 * A request a handler posted to the host (spin_notify). Answer it with
 * ss_respond(id, value).
 */
typedef struct ss_notification {
    /**
     * Pass to ss_respond.
     */
    uint32_t id;
    /**
     * The ECTX whose handler posted it.
     */
    ss_ectx ectx;
    /**
     * Global index of the HPU that posted it.
     */
    uint32_t hpu;
    /**
     * Bytes used in `data`.
     */
    uint32_t data_len;
    /**
     * NIC time (ps) at which it became visible to the host.
     */
    uint64_t time_ps;
    /**
     * The reference the handler passed (e.g. a host address it wrote to).
     */
    uint64_t host_ref;
    /**
     * Inline payload.
     */
    uint8_t data[SS_NOTIFY_INLINE_MAX];
} ss_notification;

/**
 * The main statistics (ss_get_report); `softspin sim --json` has the same
 * names (docs/sim.md). Times in ns of NIC time.
 */
typedef struct ss_report {
    /**
     * Packets fully processed (their last task completed).
     */
    uint64_t packets;
    /**
     * Bytes of those packets.
     */
    uint64_t bytes;
    /**
     * Packets that arrived.
     */
    uint64_t packets_in;
    /**
     * Packets no active ECTX matched.
     */
    uint64_t unmatched;
    /**
     * Packets dropped (packet buffer full).
     */
    uint64_t drops;
    /**
     * Messages reset by their ECTX's timeout.
     */
    uint64_t message_timeouts;
    /**
     * Packets handlers sent.
     */
    uint64_t outbound_packets;
    /**
     * Bytes handlers sent.
     */
    uint64_t outbound_bytes;
    /**
     * Host-direct writes.
     */
    uint64_t host_writes;
    /**
     * Bytes DMAed to host memory.
     */
    uint64_t dma_to_host_bytes;
    /**
     * Bytes DMAed from host memory.
     */
    uint64_t dma_from_host_bytes;
    /**
     * Commands handlers issued.
     */
    uint64_t commands;
    /**
     * Handler tasks run.
     */
    uint64_t tasks;
    /**
     * Handler errors, all ECTXs and causes.
     */
    uint64_t errors;
    /**
     * Processed bytes over the time from the first arrival to the last
     * completion, in Gbit/s.
     */
    double throughput_gbps;
    /**
     * Processed packets per microsecond.
     */
    double mpps;
    /**
     * Packet latency (arrival to the completion of its last task): minimum.
     */
    double latency_min_ns;
    /**
     * Packet latency: mean.
     */
    double latency_mean_ns;
    /**
     * Packet latency: median.
     */
    double latency_p50_ns;
    /**
     * Packet latency: 99th percentile.
     */
    double latency_p99_ns;
    /**
     * Packet latency: maximum.
     */
    double latency_max_ns;
    /**
     * Time inbound traffic was held back (buffer full, back-pressure mode).
     */
    double backpressure_ns;
    /**
     * Time messages waited for a free MPQ.
     */
    double mpq_stall_ns;
    /**
     * Busy HPU time over all HPUs' time (0..1).
     */
    double hpu_utilization;
    /**
     * NIC time simulated so far.
     */
    double sim_time_ns;
    /**
     * Most HPUs busy at once.
     */
    uint32_t hpus_busy_max;
} ss_report;

/**
 * A performance counter pushed by an ECTX's handlers (FPsPIN style).
 */
typedef struct ss_counter {
    /**
     * Counter index the handlers pushed to.
     */
    uint32_t index;
    /**
     * Sum of the pushed values.
     */
    uint64_t sum;
    /**
     * Number of pushes.
     */
    uint64_t count;
} ss_counter;

/**
 * One RMA operation for ss_client_post (fields an op does not use are
 * ignored).
 */
typedef struct ss_rma_request {
    /**
     * An ss_rma_op.
     */
    uint32_t op;
    /**
     * The target node's rank.
     */
    uint16_t rank;
    /**
     * Atomics: 4 or 8.
     */
    uint8_t width;
    /**
     * The target's window key.
     */
    uint32_t key;
    /**
     * Byte offset in the target's window.
     */
    uint64_t offset;
    /**
     * Put/get: offset in this node's RMA ECTX host window, and length.
     */
    uint64_t local;
    uint64_t len;
    /**
     * Fetch-and-add: the addend; compare-and-swap: the compare value.
     */
    uint64_t operand;
    /**
     * Compare-and-swap: the value swapped in.
     */
    uint64_t swap;
} ss_rma_request;

/**
 * A completed RMA operation (ss_client_wait, ss_client_test).
 */
typedef struct ss_rma_completion {
    /**
     * The handle ss_client_post gave.
     */
    uint64_t handle;
    /**
     * 0 OK; 1 BAD_KEY, 2 OUT_OF_WINDOW, 3 PERMISSION, 4 MALFORMED,
     * 5 UNALIGNED, 6 FAILED (softspin_wire::rma); 7 PEER_FAILED.
     */
    uint8_t status;
    /**
     * Atomics: the old word; 0 otherwise.
     */
    uint64_t value;
} ss_rma_completion;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * The message of the last failed call on this thread ("" if none failed).
 * The string belongs to the library and stays valid until the next failing
 * call on this thread. Successful calls leave it unchanged.
 */
const char *ss_last_error(void);

/**
 * The name of an error code ("SS_EINVAL", ...; "SS_UNKNOWN" for others).
 * A static string: never freed.
 */
const char *ss_strerror(int code);

/**
 * The library version ("0.1.0"). A static string: never freed.
 */
const char *ss_version(void);

/**
 * SS_ABI_VERSION of the library actually loaded (compare with the header's).
 */
uint32_t ss_abi_version(void);

/**
 * Open the simulated NIC with a named profile, "pspin" or "fpspin".
 * On success `*out` is a NIC to release with ss_close; on failure it is
 * NULL. Errors: SS_EINVAL (NULL), SS_ECONFIG (unknown profile).
 */
int ss_open(const char *profile, struct ss_nic **out);

/**
 * Open the simulated NIC a TOML file describes (docs/sim.md). As ss_open;
 * errors: SS_EINVAL, SS_EIO (unreadable), SS_ECONFIG (invalid).
 */
int ss_open_config_file(const char *path, struct ss_nic **out);

/**
 * Close a NIC: frees it with its host windows (lent buffers go back to
 * their owners untouched), ECTXs and pending events. NULL is a no-op.
 * The pointer is invalid afterwards.
 */
int ss_close(struct ss_nic *nic);

/**
 * The NIC's shape: clusters, HPUs, clock, line rate.
 */
int ss_nic_get_info(struct ss_nic *nic, struct ss_nic_info *info);

/**
 * Read a node table (e.g. what `softspin cluster up` wrote): `*count` gets
 * the number of nodes, and the first `min(cap, *count)` go to `nodes` in
 * rank order (`nodes` may be NULL when `cap` is 0, to ask for the count).
 * SS_EIO for an unreadable file, SS_EINVAL for a bad table (the message,
 * ss_last_error, names the line and field).
 */
int ss_load_nodes(const char *path, struct ss_node *nodes, size_t cap, size_t *count);

/**
 * Give the NIC a cluster's node table (a file) and its rank: handlers read
 * them through spin_node.h. SS_EINVAL for a bad table or a rank outside it.
 */
int ss_nic_set_node_table(struct ss_nic *nic, const char *path, uint32_t rank);

/**
 * Fill `o` with the defaults: SS_MODE_XDP, the "fpspin" profile, wait at
 * most 10 s for notifications.
 */
int ss_attach_options_init(struct ss_attach_options *o);

/**
 * Open a NIC on the network interface `iface` (`opts` NULL: the defaults
 * of ss_attach_options_init). Frames that match an active ECTX's rulesets
 * (ss_ectx_options.match_specs, rules_file, rules_toml, udp_dst_port) run
 * its handlers, and what handlers send goes out on the interface; every
 * other frame goes to the kernel untouched. Everything else works as on
 * the simulated NIC, paced by the wall clock: ss_run_live runs it,
 * ss_run_for_ns runs it for wall time, ss_run_until_idle processes what
 * has arrived. On success `*out` is a NIC to release with ss_close (which
 * detaches it); on failure NULL. Errors: SS_EINVAL (bad mode, profile and
 * config_path both set), SS_ECONFIG, SS_EIO (config file), SS_ENET (no
 * such interface, not permitted: XDP needs root, or use SS_MODE_SOCKET;
 * an XDP program already on the interface, XDP unsupported).
 */
int ss_nic_attach(const char *iface, const struct ss_attach_options *opts, struct ss_nic **out);

/**
 * `*live` gets 1 for a NIC from ss_nic_attach, 0 for a simulated one.
 */
int ss_nic_is_live(struct ss_nic *nic, int *live);

/**
 * Run a live NIC for `duration_ns` of wall time, or, with 0, until
 * ss_stop. Handler errors become events as in simulation; read them (and
 * notifications) afterwards, or run in slices and read between them.
 * A stop requested before the call makes it return at once; either way
 * the request is consumed when it returns. Errors: SS_EINVAL (a simulated
 * NIC), SS_ENET (the interface failed), SS_ESIM.
 */
int ss_run_live(struct ss_nic *nic, uint64_t duration_ns);

/**
 * Ask ss_run_live on this NIC to return (after its current step, within
 * about 20 ms). Async-signal-safe (one atomic store, no allocation, no
 * lock): call it from a SIGINT handler or another thread. NULL is a no-op.
 * Always SS_OK.
 */
int ss_stop(struct ss_nic *nic);

/**
 * What a live NIC did on the wire, into `*out_stats`. Errors: SS_EINVAL
 * (NULL, or a simulated NIC).
 */
int ss_get_live_stats(struct ss_nic *nic, struct ss_live_stats *out_stats);

/**
 * A snapshot of the live NIC's progress into `*out_status` (it takes the
 * engine's report: call it every second or so, not per packet). Errors:
 * SS_EINVAL (NULL, or a simulated NIC).
 */
int ss_get_live_status(struct ss_nic *nic, struct ss_live_status *out_status);

/**
 * A live NIC's drops by cause (those with a count), up to `cap` into
 * `out_drops` (may be NULL when `cap` is 0), in name order; `*count` gets
 * how many causes there are. Errors: SS_EINVAL (NULL, or a simulated NIC).
 */
int ss_live_drops(struct ss_nic *nic, struct ss_live_drop *out_drops, size_t cap, size_t *count);

/**
 * A live NIC's statistics as text (the port, e.g. "socket on lo", the
 * counters and the drops by cause, one per line), copied like
 * ss_report_text. Errors: SS_EINVAL (NULL, or a simulated NIC).
 */
int ss_live_stats_text(struct ss_nic *nic, char *buf, size_t cap, size_t *len);

/**
 * Fill `o` with the defaults: adaptive window, SS_SLMP_SYNC_ALL, 1462-byte
 * segments, first message id 1, give up after 10 s without an ACK.
 */
int ss_slmp_options_init(struct ss_slmp_options *o);

/**
 * Send `count` messages (`msgs[i]`, `lens[i]` bytes; message ids counting
 * up from opts->first_msg_id) to the SLMP receiver at `to` ("ADDR[:PORT]",
 * default port 9330). `opts` NULL: the defaults. `out_stats` (may be NULL)
 * is filled on success and when the sender gives up. Blocks until every
 * message is acknowledged (or sent, without SS_SLMP_SYNC_ALL). Errors:
 * SS_EINVAL (NULL, bad address or option), SS_ELIMIT (a message over
 * 4 GiB), SS_ENET (socket error, or the sender gave up: a segment still
 * unacknowledged after its retransmissions, or no ACK for give_up_ns).
 */
int ss_slmp_send(const char *to,
                 const void *const *msgs,
                 const size_t *lens,
                 size_t count,
                 const struct ss_slmp_options *opts,
                 struct ss_slmp_stats *out_stats);

/**
 * Load a handler image (an RV32 ELF from `softspin build`). On success
 * `*out` is an image to release with ss_image_free; on failure NULL.
 * Errors: SS_EINVAL, SS_EIO (unreadable), SS_EIMAGE (not a handler image).
 */
int ss_image_load(struct ss_nic *nic, const char *path, struct ss_image **out);

/**
 * Load a handler image from `len` bytes of ELF in memory (copied). As
 * ss_image_load; errors: SS_EINVAL, SS_EIMAGE.
 */
int ss_image_from_bytes(struct ss_nic *nic, const void *data, size_t len, struct ss_image **out);

/**
 * Free an image. NULL is a no-op. ECTXs installed from it are unaffected.
 */
int ss_image_free(struct ss_image *image);

/**
 * The NIC address of a symbol (a handler or a global in handler memory):
 * write a global with ss_nic_write at that address. Errors: SS_EINVAL,
 * SS_ESYMBOL.
 */
int ss_image_symbol(const struct ss_image *image, const char *name, uint32_t *addr);

/**
 * Create a zeroed host window of `size` bytes owned by the NIC (freed by
 * ss_host_unlend or ss_close); reach it with ss_host_read/ss_host_write.
 * A window holds at most 4 GiB - 1 bytes (task_t's 32-bit host_mem_size),
 * and the NIC's own windows 4 GiB in all (lend larger amounts).
 * Errors: SS_EINVAL, SS_EHOST (size 0), SS_ELIMIT (above a limit, or the
 * memory could not be allocated).
 */
int ss_host_window_create(struct ss_nic *nic, size_t size, struct ss_host_window *out_window);

/**
 * Lend the NIC the caller's buffer `buf` of `len` bytes as a host window,
 * used in place: handler DMA reads and writes it directly, and the caller
 * reads results straight from `buf` between calls. The caller keeps
 * ownership and must keep `buf` valid until ss_host_unlend or ss_close, and
 * must not access it from another thread while a call on this NIC runs.
 * The library never frees it. At most 4 GiB - 1 bytes (task_t's 32-bit
 * host_mem_size). Errors: SS_EINVAL, SS_EHOST (len 0), SS_ELIMIT.
 */
int ss_host_lend(struct ss_nic *nic, void *buf, size_t len, struct ss_host_window *out_window);

/**
 * Take a window back: a lent buffer returns to its owner (the NIC stops
 * using it; the bytes stay as handlers left them), a window from
 * ss_host_window_create is freed. ECTXs using it must not run afterwards.
 * Errors: SS_EINVAL, SS_EHOST (no window at window.base).
 */
int ss_host_unlend(struct ss_nic *nic, struct ss_host_window window);

/**
 * Copy `len` bytes of host memory at host address `addr` (inside one
 * window) into `out_buf`. Errors: SS_EINVAL, SS_EHOST (not inside a window).
 */
int ss_host_read(struct ss_nic *nic, uint64_t addr, void *out_buf, size_t len);

/**
 * Copy `len` bytes from `data` to host memory at host address `addr`
 * (inside one window). Errors: SS_EINVAL, SS_EHOST.
 */
int ss_host_write(struct ss_nic *nic, uint64_t addr, const void *data, size_t len);

/**
 * Fill `o` with the defaults: no name, no handlers, image data only, whole
 * packets to L1, no host window, no scratchpad, watchdog 1,000,000
 * instructions, message timeout 1 ms, every packet, no RMA transport.
 */
int ss_ectx_options_init(struct ss_ectx_options *o);

/**
 * Install an ECTX for `image`: code to program memory, data to handler
 * memory, everything checked. It receives no packet before ss_activate.
 * `*out_ectx` gets its handle. Errors: SS_EINVAL, SS_ESYMBOL (a handler symbol
 * is missing), SS_EOVERLAP (memory overlaps an installed ECTX),
 * SS_ENICMEM (does not fit), SS_EHOST (a host window this NIC did not make,
 * or changed), SS_EECTX (other install problems).
 */
int ss_install(struct ss_nic *nic,
               const struct ss_image *image,
               const struct ss_ectx_options *options,
               ss_ectx *out_ectx);

/**
 * Let packets reach an installed ECTX. Errors: SS_EINVAL, SS_ENOECTX,
 * SS_ESTATE (already active).
 */
int ss_activate(struct ss_nic *nic, ss_ectx ectx);

/**
 * Stop new packets reaching an ECTX (messages in flight finish). Errors:
 * SS_EINVAL, SS_ENOECTX, SS_ESTATE (not active).
 */
int ss_deactivate(struct ss_nic *nic, ss_ectx ectx);

/**
 * Remove an inactive ECTX with no message in flight; its handle becomes
 * invalid (SS_ENOECTX). Errors: SS_EINVAL, SS_ENOECTX, SS_ESTATE (active,
 * or messages in flight: deactivate and ss_run_until_idle first).
 */
int ss_uninstall(struct ss_nic *nic, ss_ectx ectx);

/**
 * The frames ss_send_message builds for this ECTX: SS_FRAME_IP (default)
 * or SS_FRAME_ETH. Errors: SS_EINVAL, SS_ENOECTX.
 */
int ss_set_frame_kind(struct ss_nic *nic, ss_ectx ectx, uint32_t kind);

/**
 * Allocate `size` bytes (aligned to `align`, a power of two; 0 = 1) of the
 * ECTX's handler memory beyond its image's data (size the region with
 * handler_mem_size). `*addr` gets the NIC address, for structures the
 * handlers follow. Never freed individually (the region goes with the
 * ECTX). Errors: SS_EINVAL, SS_ENOECTX, SS_ENICMEM (does not fit, bad
 * alignment).
 */
int ss_nic_alloc(struct ss_nic *nic, ss_ectx ectx, size_t size, size_t align, uint32_t *addr);

/**
 * Copy `len` bytes of NIC memory at NIC address `addr` into `out_buf`. Errors:
 * SS_EINVAL, SS_ENICMEM (not NIC memory).
 */
int ss_nic_read(struct ss_nic *nic, uint32_t addr, void *out_buf, size_t len);

/**
 * Copy `len` bytes from `data` to NIC memory at NIC address `addr`.
 * Errors: SS_EINVAL, SS_ENICMEM.
 */
int ss_nic_write(struct ss_nic *nic, uint32_t addr, const void *data, size_t len);

/**
 * RMA memory registration (docs/rma.md "Windows and keys"): export `size`
 * bytes at `offset` of the ECTX's host window under `key` with `perms`
 * (READ 1 | WRITE 2 | ATOMIC 4) in the window table of its image (the RMA
 * target handlers, examples/rma_target); the same key again replaces its
 * window. Errors: SS_EINVAL (key 0, no or unknown permissions, an image
 * without the table, an ECTX without a host window), SS_ELIMIT (past the
 * host window, table full), SS_ENOECTX.
 */
int ss_export_window(struct ss_nic *nic,
                     ss_ectx ectx,
                     uint32_t key,
                     uint64_t offset,
                     uint64_t size,
                     uint32_t perms);

/**
 * Withdraw the RMA window exported under `key`: requests for it get "bad
 * key". Errors: SS_EINVAL (no window under the key), SS_ENOECTX.
 */
int ss_unexport_window(struct ss_nic *nic, ss_ectx ectx, uint32_t key);

/**
 * Store the NIC pointer `target` (a 32-bit NIC address) at `addr`: the
 * relocation step when building linked structures for handlers. Errors:
 * SS_EINVAL, SS_ENICMEM.
 */
int ss_nic_write_ptr(struct ss_nic *nic, uint32_t addr, uint32_t target);

/**
 * Build a frame of kind SS_FRAME_IP/SS_FRAME_ETH around `payload` (UDP
 * 10.0.0.1:9330 -> 10.0.0.2:`udp_dst_port`, the headers ss_send_message
 * uses) into `out_frame` of `cap` bytes; `*frame_len` gets the frame's length.
 * A NULL `out_frame` with `cap` 0 only asks for the length. Errors: SS_EINVAL
 * (also when `cap` is too small; `*frame_len` still tells the length),
 * SS_ETRAFFIC (frame over 65535 bytes).
 */
int ss_build_frame(uint32_t kind,
                   uint16_t udp_dst_port,
                   const void *payload,
                   size_t payload_len,
                   void *out_frame,
                   size_t cap,
                   size_t *frame_len);

/**
 * Hand the NIC one packet (a whole frame, copied) of message `msg_id`,
 * arriving now; `eom` nonzero ends the message. Packets match ECTXs by
 * their UDP port. Problems with the frame surface when running (SS_ESIM).
 * Errors: SS_EINVAL.
 */
int ss_send_packet(struct ss_nic *nic, const void *frame, size_t len, uint32_t msg_id, int eom);

/**
 * Send `len` bytes of `payload` (copied) as message `msg_id` to an ECTX:
 * split into packets of at most `packet_size` bytes, headers included
 * (28-byte IP/UDP headers for SS_FRAME_IP: payload starts at pkt_mem + 28),
 * addressed to the ECTX's port and spaced at the line rate from now.
 * Errors: SS_EINVAL (packet_size leaves no room), SS_ENOECTX, SS_ETRAFFIC.
 */
int ss_send_message(struct ss_nic *nic,
                    ss_ectx ectx,
                    uint32_t msg_id,
                    const void *payload,
                    size_t len,
                    size_t packet_size);

/**
 * Fill `g` with the generator's defaults: 1 message of 1 packet of 1024
 * bytes at 400 Gbit/s, 1 in flight, SS_FRAME_IP, SS_PAYLOAD_SEQUENCE, seed
 * 0, message ids from 0, UDP 10.0.0.1:9330 -> 10.0.0.2:9330.
 */
int ss_gen_config_init(struct ss_gen_config *g);

/**
 * Feed packets from the synthetic generator (replacing any feed not yet
 * consumed). Errors: SS_EINVAL, SS_ETRAFFIC (invalid parameter).
 */
int ss_feed_generator(struct ss_nic *nic, const struct ss_gen_config *config);

/**
 * Feed a PsPIN-style text trace (docs/sim.md) with frames of `kind`.
 * Errors: SS_EINVAL, SS_EIO, SS_ETRAFFIC (malformed line: file and line in
 * the message; may also surface later, when running).
 */
int ss_feed_trace(struct ss_nic *nic, const char *path, uint32_t kind);

/**
 * Feed a pcap or pcapng file of Ethernet frames: at its timestamps
 * (`rate_gbps` 0) or back to back at `rate_gbps`. Errors: SS_EINVAL
 * (negative rate), SS_EIO, SS_ETRAFFIC.
 */
int ss_feed_pcap(struct ss_nic *nic, const char *path, double rate_gbps);

/**
 * Run until nothing is left to do (all traffic processed), or every
 * handler waits for the host (answer notifications, then run again).
 * Errors: SS_EINVAL, SS_ESIM, SS_ETRAFFIC, SS_EIO.
 */
int ss_run_until_idle(struct ss_nic *nic);

/**
 * Run for `ns` nanoseconds of NIC time. Errors as ss_run_until_idle, and
 * SS_ELIMIT (the end would pass the simulation horizon, 2^63 ps).
 */
int ss_run_for_ns(struct ss_nic *nic, uint64_t ns);

/**
 * The current NIC time in nanoseconds.
 */
int ss_now_ns(struct ss_nic *nic, double *out_ns);

/**
 * Take the next event (kind SS_EVENT_NONE when there is none). Events come
 * in batches as the NIC produced them since the last batch: handler errors,
 * then outbound packets, host writes and completed messages, each kind in
 * time order. Pointers in `*ev` stay valid until the next ss_next_event or
 * ss_close on this NIC. Errors: SS_EINVAL.
 */
int ss_next_event(struct ss_nic *nic, struct ss_event *ev);

/**
 * Copy up to `cap` notifications that reached the host into `out_notes` (oldest
 * first); `*count` gets how many. Ones that did not fit stay for the next
 * call. Errors: SS_EINVAL.
 */
int ss_poll_notifications(struct ss_nic *nic,
                          struct ss_notification *out_notes,
                          size_t cap,
                          size_t *count);

/**
 * As ss_poll_notifications, but first run the NIC until at least one
 * notification is available or nothing is left to run (`*count` 0).
 * Errors: SS_EINVAL, and those of ss_run_until_idle.
 */
int ss_wait_notifications(struct ss_nic *nic,
                          struct ss_notification *out_notes,
                          size_t cap,
                          size_t *count);

/**
 * Answer notification `id` with `value`; the handler sees it one PCIe
 * latency later. Errors: SS_EINVAL (unknown or already answered).
 */
int ss_respond(struct ss_nic *nic, uint32_t id, uint64_t value);

/**
 * The statistics so far into `*out_report`. Errors: SS_EINVAL.
 */
int ss_get_report(struct ss_nic *nic, struct ss_report *out_report);

/**
 * The report as `softspin sim` prints it (with per-handler rows), copied
 * into `buf` of `cap` bytes, NUL-terminated, truncated if need be; `*len`
 * (may be NULL) gets the full length without the NUL. `buf` may be NULL
 * when `cap` is 0 (to ask for the length). Errors: SS_EINVAL.
 */
int ss_report_text(struct ss_nic *nic, char *buf, size_t cap, size_t *len);

/**
 * Packets admitted to and messages completed by an ECTX. Errors: SS_EINVAL,
 * SS_ENOECTX.
 */
int ss_ectx_counts(struct ss_nic *nic, ss_ectx ectx, uint64_t *packets, uint64_t *messages);

/**
 * Performance counters an ECTX's handlers pushed, by index: up to `cap`
 * into `out_counters` (may be NULL when `cap` is 0); `*count` gets how many exist.
 * Errors: SS_EINVAL, SS_ENOECTX.
 */
int ss_counters(struct ss_nic *nic,
                ss_ectx ectx,
                struct ss_counter *out_counters,
                size_t cap,
                size_t *count);

/**
 * The printf output of HPU `hpu` (global index, below hpu_count), copied
 * like ss_report_text. Errors: SS_EINVAL (no such HPU).
 */
int ss_hpu_stdout(struct ss_nic *nic, uint32_t hpu, char *buf, size_t cap, size_t *len);

/**
 * Connect to the control socket at `path` (`softspin nic --control PATH`)
 * and map the host memory the NIC shares (`--host-shm`). Errors: SS_EINVAL,
 * SS_EIO (no NIC there, the shared file).
 */
int ss_client_connect(const char *path, struct ss_client **out_client);

/**
 * Close the connection and unmap the shared memory (NULL is a no-op).
 */
int ss_client_close(struct ss_client *c);

/**
 * The shared host memory, in place (valid until ss_client_close): what
 * the NIC's handlers DMA-write appears there, and what is stored there is
 * what they DMA-read. Errors: SS_EINVAL (the NIC shares none).
 */
int ss_client_host_mem(struct ss_client *c, uint8_t **out_mem, size_t *out_len);

/**
 * The ECTX called `name` (its handle for the other calls) and where its
 * host window starts in ss_client_host_mem. Errors: SS_EINVAL.
 */
int ss_client_ectx(struct ss_client *c,
                   const char *name,
                   ss_ectx *out_ectx,
                   uint64_t *out_shm_offset);

/**
 * Export an RMA window through the NIC (as ss_export_window). Errors:
 * SS_EINVAL (the NIC refused: the message says why), SS_EIO.
 */
int ss_client_export_window(struct ss_client *c,
                            ss_ectx ectx,
                            uint32_t key,
                            uint64_t offset,
                            uint64_t size,
                            uint32_t perms);

/**
 * Withdraw the RMA window exported under `key`. Errors: SS_EINVAL, SS_EIO.
 */
int ss_client_unexport_window(struct ss_client *c, ss_ectx ectx, uint32_t key);

/**
 * Up to `cap` of the ECTX's counters into `out_counters`; `*count` gets how
 * many there are (more than `cap`: call again with room). Errors:
 * SS_EINVAL, SS_EIO.
 */
int ss_client_counters(struct ss_client *c,
                       ss_ectx ectx,
                       struct ss_counter *out_counters,
                       size_t cap,
                       size_t *count);

/**
 * The NIC's status as JSON text (docs/host-interface.md, op `status`),
 * NUL-terminated, cut to `cap`; `*len` gets its full length. Errors:
 * SS_EINVAL, SS_EIO.
 */
int ss_client_status(struct ss_client *c, char *buf, size_t cap, size_t *len);

/**
 * Wait at most `timeout_ms` for a notification a handler posted; `*got` is
 * 1 and `*out_note` filled when one came, else 0. Answer it with
 * ss_client_respond. Errors: SS_EINVAL, SS_EIO.
 */
int ss_client_wait_notification(struct ss_client *c,
                                uint64_t timeout_ms,
                                struct ss_notification *out_note,
                                int *got);

/**
 * Answer notification `id` with `value`. Errors: SS_EINVAL (no such
 * notification), SS_EIO.
 */
int ss_client_respond(struct ss_client *c, uint32_t id, uint64_t value);

/**
 * Post an RMA operation without waiting (docs/host-interface.md "RMA");
 * `*handle` is this client's handle for ss_client_wait/ss_client_test. A
 * put sends bytes stored in the host window before the call. Errors:
 * SS_EINVAL (a bad request: the message says why), SS_EIO.
 */
int ss_client_post(struct ss_client *c, const struct ss_rma_request *req, uint64_t *handle);

/**
 * Wait at most `timeout_ms` for the completion of `handle`: `*got` is 1
 * and `*out` filled when it came (each completion is returned once), else
 * 0. A non-OK status is in `out->status`, not an error. Errors: SS_EINVAL
 * (not a handle of this client's still to be waited for), SS_EIO.
 */
int ss_client_wait(struct ss_client *c,
                   uint64_t handle,
                   uint64_t timeout_ms,
                   struct ss_rma_completion *out_completion,
                   int *got);

/**
 * ss_client_wait without waiting.
 */
int ss_client_test(struct ss_client *c,
                   uint64_t handle,
                   struct ss_rma_completion *out_completion,
                   int *got);

/**
 * Put (blocking): `len` bytes of the RMA ECTX's host window at `local`
 * (within ss_client_host_mem at the ECTX's shm offset) to `offset` in rank
 * `rank`'s window `key`. Errors: SS_EHOST (a non-OK status: the message
 * names it, e.g. BAD_KEY, and for PEER_FAILED the rank), SS_EINVAL, SS_EIO.
 */
int ss_client_put(struct ss_client *c,
                  uint16_t rank,
                  uint32_t key,
                  uint64_t offset,
                  uint64_t local,
                  uint64_t len);

/**
 * Get (blocking): `len` bytes at `offset` of rank `rank`'s window `key`
 * into the host window at `local`. Errors: as ss_client_put.
 */
int ss_client_get(struct ss_client *c,
                  uint16_t rank,
                  uint32_t key,
                  uint64_t offset,
                  uint64_t local,
                  uint64_t len);

/**
 * Fetch-and-add (blocking) on the `width`-byte (4 or 8) word at `offset`;
 * `*old` gets the word before. Errors: as ss_client_put.
 */
int ss_client_fetch_add(struct ss_client *c,
                        uint16_t rank,
                        uint32_t key,
                        uint64_t offset,
                        uint8_t width,
                        uint64_t addend,
                        uint64_t *old);

/**
 * Compare-and-swap (blocking) on the `width`-byte word at `offset`: `*old`
 * gets the word before (swapped iff it equalled `compare`). Errors: as
 * ss_client_put.
 */
int ss_client_cas(struct ss_client *c,
                  uint16_t rank,
                  uint32_t key,
                  uint64_t offset,
                  uint8_t width,
                  uint64_t compare,
                  uint64_t swap,
                  uint64_t *old);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* SOFTSPIN_H */
