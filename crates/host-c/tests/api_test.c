/*
 * The C API test (run by tests/c_api.rs): every error path returns its
 * SS_E* code with a message, and a success path whose results are checked
 * against values computed here.
 *
 * usage: api_test HANDLERS.elf TMPDIR PINGPONG.elf
 *   HANDLERS.elf: tests/handlers/api_handlers.c
 *   PINGPONG.elf: examples/ping_pong/handler.c built for the fpspin profile
 *                 (the live NIC test: UDP echo on lo in socket mode)
 */
#define _POSIX_C_SOURCE 200809L

#include <softspin.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static int checks, failures;

static void fail_at(int line, const char *what)
{
    fprintf(stderr, "api_test.c:%d: FAILED: %s\n", line, what);
    failures++;
}

/* A call must return `want`; a failure must also leave a message. */
#define EXPECT(call, want)                                                                  \
    do {                                                                                    \
        int r_ = (call);                                                                    \
        checks++;                                                                           \
        if (r_ != (want)) {                                                                 \
            fprintf(stderr, "api_test.c:%d: %s returned %d (%s), wanted %s; last error: %s\n", \
                    __LINE__, #call, r_, ss_strerror(r_), #want, ss_last_error());          \
            failures++;                                                                     \
        } else if (r_ < 0 && ss_last_error()[0] == '\0') {                                  \
            fail_at(__LINE__, #call " failed without a message");                           \
        }                                                                                   \
    } while (0)

#define OK(call) EXPECT(call, SS_OK)

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        checks++;                                                                           \
        if (!(cond))                                                                        \
            fail_at(__LINE__, #cond);                                                       \
    } while (0)

/* Stop here: later checks depend on this one. */
#define REQUIRE(call)                                                                       \
    do {                                                                                    \
        int r_ = (call);                                                                    \
        if (r_ != SS_OK) {                                                                  \
            fprintf(stderr, "api_test.c:%d: %s: %s: %s\n", __LINE__, #call, ss_strerror(r_), \
                    ss_last_error());                                                       \
            exit(2);                                                                        \
        }                                                                                   \
    } while (0)

static const char *elf;
static char tmpdir[512];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

static uint32_t le32(const uint8_t *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* ------------------------------------------------------------------ errors */

static void test_library(void)
{
    CHECK(ss_abi_version() == SS_ABI_VERSION);
    CHECK(strlen(ss_version()) > 0);
    CHECK(strcmp(ss_strerror(SS_EOVERLAP), "SS_EOVERLAP") == 0);
    CHECK(strcmp(ss_strerror(12345), "SS_UNKNOWN") == 0);
    OK(ss_close(NULL));
    OK(ss_image_free(NULL));
}

static void test_open_errors(void)
{
    char path[600];
    ss_nic *nic = (ss_nic *)&nic; /* must be reset to NULL on failure */

    EXPECT(ss_open("no-such-profile", &nic), SS_ECONFIG);
    CHECK(nic == NULL);
    CHECK(strstr(ss_last_error(), "no-such-profile") != NULL);
    EXPECT(ss_open(NULL, &nic), SS_EINVAL);
    EXPECT(ss_open("pspin", NULL), SS_EINVAL);

    EXPECT(ss_open_config_file("/nonexistent/nic.toml", &nic), SS_EIO);
    CHECK(nic == NULL);
    snprintf(path, sizeof path, "%s/bad.toml", tmpdir);
    write_file(path, "profile = \"pspin\"\nmpqs = \"many\"\n");
    EXPECT(ss_open_config_file(path, &nic), SS_ECONFIG);
    CHECK(strstr(ss_last_error(), "mpqs") != NULL);
    EXPECT(ss_open_config_file(NULL, &nic), SS_EINVAL);

    snprintf(path, sizeof path, "%s/good.toml", tmpdir);
    write_file(path, "profile = \"fpspin\"\nmpqs = 8\n");
    OK(ss_open_config_file(path, &nic));
    ss_nic_info info;
    OK(ss_nic_get_info(nic, &info));
    CHECK(strcmp(info.profile, "fpspin") == 0);
    CHECK(info.clusters == 2 && info.hpu_count == 16);
    EXPECT(ss_nic_get_info(nic, NULL), SS_EINVAL);
    EXPECT(ss_nic_get_info(NULL, &info), SS_EINVAL);
    OK(ss_close(nic));
}

static void test_image_errors(ss_nic *nic)
{
    char path[600];
    ss_image *img = (ss_image *)&img;

    EXPECT(ss_image_load(nic, "/nonexistent/handler.elf", &img), SS_EIO);
    CHECK(img == NULL);
    CHECK(strstr(ss_last_error(), "/nonexistent/handler.elf") != NULL);
    snprintf(path, sizeof path, "%s/not-an-elf.txt", tmpdir);
    write_file(path, "this is not an ELF file\n");
    EXPECT(ss_image_load(nic, path, &img), SS_EIMAGE);
    EXPECT(ss_image_from_bytes(nic, "\177ELF\001garbage", 12, &img), SS_EIMAGE);
    EXPECT(ss_image_from_bytes(nic, NULL, 12, &img), SS_EINVAL);
    EXPECT(ss_image_load(nic, NULL, &img), SS_EINVAL);
    EXPECT(ss_image_load(nic, elf, NULL), SS_EINVAL);
    EXPECT(ss_image_load(NULL, elf, &img), SS_EINVAL);

    REQUIRE(ss_image_load(nic, elf, &img));
    uint32_t addr = 0;
    EXPECT(ss_image_symbol(img, "no_such_symbol", &addr), SS_ESYMBOL);
    CHECK(strstr(ss_last_error(), "no_such_symbol") != NULL);
    EXPECT(ss_image_symbol(img, NULL, &addr), SS_EINVAL);
    EXPECT(ss_image_symbol(img, "api_ph", NULL), SS_EINVAL);
    EXPECT(ss_image_symbol(NULL, "api_ph", &addr), SS_EINVAL);
    OK(ss_image_symbol(img, "api_ph", &addr));
    CHECK(addr >= 0x1D000000u && addr < 0x1E000000u); /* program memory */
    OK(ss_image_free(img));
}

static void test_ectx_errors(ss_nic *nic)
{
    ss_image *img;
    ss_ectx e = 0, e2 = 0;
    ss_ectx_options o;
    REQUIRE(ss_image_load(nic, elf, &img));
    OK(ss_ectx_options_init(&o));
    EXPECT(ss_ectx_options_init(NULL), SS_EINVAL);

    /* No handler at all, an unknown one, NULL arguments. */
    EXPECT(ss_install(nic, img, &o, &e), SS_EECTX);
    o.ph = "no_such_handler";
    EXPECT(ss_install(nic, img, &o, &e), SS_ESYMBOL);
    CHECK(strstr(ss_last_error(), "no_such_handler") != NULL);
    o.ph = "count_ph";
    EXPECT(ss_install(nic, NULL, &o, &e), SS_EINVAL);
    EXPECT(ss_install(nic, img, NULL, &e), SS_EINVAL);
    EXPECT(ss_install(nic, img, &o, NULL), SS_EINVAL);
    EXPECT(ss_install(NULL, img, &o, &e), SS_EINVAL);
    o.scratchpad_len = 2; /* with a NULL array */
    EXPECT(ss_install(nic, img, &o, &e), SS_EINVAL);
    o.scratchpad_len = 0;
    o.handler_mem_size = 0x7FFFFFFF; /* far beyond L2 handler memory */
    EXPECT(ss_install(nic, img, &o, &e), SS_ENICMEM);
    o.handler_mem_size = 0;

    OK(ss_install(nic, img, &o, &e));
    /* The same image again: its code and data overlap the first ECTX. */
    EXPECT(ss_install(nic, img, &o, &e2), SS_EOVERLAP);
    CHECK(strstr(ss_last_error(), "overlaps") != NULL);

    /* States. */
    EXPECT(ss_deactivate(nic, e), SS_ESTATE);
    OK(ss_activate(nic, e));
    EXPECT(ss_activate(nic, e), SS_ESTATE);
    CHECK(strstr(ss_last_error(), "already active") != NULL);
    EXPECT(ss_uninstall(nic, e), SS_ESTATE);
    OK(ss_deactivate(nic, e));
    EXPECT(ss_deactivate(nic, e), SS_ESTATE);
    EXPECT(ss_set_frame_kind(nic, e, 9), SS_EINVAL);
    OK(ss_uninstall(nic, e));

    /* Use after uninstall. */
    uint64_t p, m;
    size_t n;
    uint32_t a;
    EXPECT(ss_activate(nic, e), SS_ENOECTX);
    EXPECT(ss_deactivate(nic, e), SS_ENOECTX);
    EXPECT(ss_uninstall(nic, e), SS_ENOECTX);
    EXPECT(ss_send_message(nic, e, 0, "x", 1, 256), SS_ENOECTX);
    EXPECT(ss_ectx_counts(nic, e, &p, &m), SS_ENOECTX);
    EXPECT(ss_counters(nic, e, NULL, 0, &n), SS_ENOECTX);
    EXPECT(ss_nic_alloc(nic, e, 16, 4, &a), SS_ENOECTX);
    EXPECT(ss_set_frame_kind(nic, e, SS_FRAME_ETH), SS_ENOECTX);
    EXPECT(ss_activate(nic, 4242), SS_ENOECTX);

    EXPECT(ss_export_window(nic, e, 1, 0, 8, 7), SS_ENOECTX);
    EXPECT(ss_unexport_window(nic, e, 1), SS_ENOECTX);

    /* A new install gets a new handle. */
    OK(ss_install(nic, img, &o, &e2));
    CHECK(e2 != e);
    /* Not the RMA target's image: no window table. */
    EXPECT(ss_export_window(nic, e2, 1, 0, 8, 7), SS_EINVAL);
    CHECK(strstr(ss_last_error(), "rma_windows") != NULL);
    EXPECT(ss_export_window(NULL, e2, 1, 0, 8, 7), SS_EINVAL);
    EXPECT(ss_nic_alloc(nic, e2, 1 << 20, 4, &a), SS_ENICMEM); /* no room beyond the data */
    EXPECT(ss_nic_alloc(nic, e2, 4, 3, &a), SS_ENICMEM);       /* not a power of two */
    EXPECT(ss_nic_alloc(nic, e2, 4, 4, NULL), SS_EINVAL);
    OK(ss_uninstall(nic, e2));
    OK(ss_image_free(img));
}

static void test_memory_errors(ss_nic *nic)
{
    ss_host_window w, none = {0x1234, 16};
    uint8_t buf[32] = {0}, back[32];

    EXPECT(ss_host_window_create(nic, 0, &w), SS_EHOST);
    EXPECT(ss_host_window_create(nic, 64, NULL), SS_EINVAL);
    EXPECT(ss_host_lend(nic, NULL, 64, &w), SS_EINVAL);
    EXPECT(ss_host_lend(nic, buf, 0, &w), SS_EHOST);
    EXPECT(ss_host_unlend(nic, none), SS_EHOST);
    EXPECT(ss_host_read(nic, 0x1234, back, 8), SS_EHOST);

    OK(ss_host_window_create(nic, 64, &w));
    CHECK(w.size == 64 && w.base > 0xFFFFFFFFull); /* a 64-bit host address */
    OK(ss_host_write(nic, w.base + 60, "abcd", 4));
    EXPECT(ss_host_write(nic, w.base + 61, "abcd", 4), SS_EHOST); /* crosses the end */
    EXPECT(ss_host_write(nic, w.base, NULL, 4), SS_EINVAL);
    OK(ss_host_write(nic, w.base, NULL, 0));
    OK(ss_host_read(nic, w.base + 56, back, 8));
    CHECK(memcmp(back, "\0\0\0\0abcd", 8) == 0);
    EXPECT(ss_host_read(nic, w.base, NULL, 8), SS_EINVAL);
    OK(ss_host_unlend(nic, w));
    EXPECT(ss_host_read(nic, w.base, back, 8), SS_EHOST);

    /* A lent buffer is used in place. */
    OK(ss_host_lend(nic, buf, sizeof buf, &w));
    OK(ss_host_write(nic, w.base + 3, "xyz", 3));
    CHECK(memcmp(buf + 3, "xyz", 3) == 0);
    memcpy(buf + 10, "host", 4);
    OK(ss_host_read(nic, w.base + 10, back, 4));
    CHECK(memcmp(back, "host", 4) == 0);
    OK(ss_host_unlend(nic, w));
    CHECK(memcmp(buf + 3, "xyz", 3) == 0); /* still the caller's */

    EXPECT(ss_nic_read(nic, 0x40, back, 4), SS_ENICMEM);
    EXPECT(ss_nic_write(nic, 0x40, "abcd", 4), SS_ENICMEM);
    EXPECT(ss_nic_write_ptr(nic, 0x40, 0), SS_ENICMEM);
    EXPECT(ss_nic_read(nic, 0x1C000000, NULL, 4), SS_EINVAL);
}

static void test_traffic_errors(ss_nic *nic)
{
    char path[600];
    ss_gen_config g;
    uint8_t frame[128];
    size_t len = 0;

    EXPECT(ss_feed_trace(nic, "/nonexistent/trace.txt", SS_FRAME_IP), SS_EIO);
    snprintf(path, sizeof path, "%s/bad.trace", tmpdir);
    write_file(path, "# src dst size ipg msgid is_last\n1 2 64 x 0 1\n");
    EXPECT(ss_feed_trace(nic, path, SS_FRAME_IP), SS_ETRAFFIC);
    CHECK(strstr(ss_last_error(), "bad.trace:2") != NULL);
    EXPECT(ss_feed_trace(nic, path, 7), SS_EINVAL);
    EXPECT(ss_feed_trace(nic, NULL, SS_FRAME_IP), SS_EINVAL);
    EXPECT(ss_feed_pcap(nic, "/nonexistent/x.pcap", 0), SS_EIO);
    EXPECT(ss_feed_pcap(nic, "/nonexistent/x.pcap", -1), SS_EINVAL);

    OK(ss_gen_config_init(&g));
    CHECK(g.messages == 1 && g.size == 1024 && g.frame == SS_FRAME_IP);
    g.messages = 0;
    EXPECT(ss_feed_generator(nic, &g), SS_ETRAFFIC);
    CHECK(strstr(ss_last_error(), "messages") != NULL);
    g.messages = 1;
    g.payload = 9;
    EXPECT(ss_feed_generator(nic, &g), SS_EINVAL);
    EXPECT(ss_feed_generator(nic, NULL), SS_EINVAL);
    EXPECT(ss_gen_config_init(NULL), SS_EINVAL);

    EXPECT(ss_build_frame(SS_FRAME_IP, 9330, "abc", 3, frame, 16, &len), SS_EINVAL); /* too small */
    CHECK(len == 31);
    len = 0;
    OK(ss_build_frame(SS_FRAME_IP, 9330, "abc", 3, NULL, 0, &len)); /* asks for the size */
    CHECK(len == 31);
    OK(ss_build_frame(SS_FRAME_IP, 9330, "abc", 3, frame, sizeof frame, &len));
    CHECK(len == 31 && frame[0] == 0x54 && memcmp(frame + 28, "abc", 3) == 0);
    OK(ss_build_frame(SS_FRAME_ETH, 9330, "abc", 3, frame, sizeof frame, &len));
    CHECK(len == 45 && frame[12] == 0x08 && frame[13] == 0x00);
    EXPECT(ss_build_frame(5, 9330, "abc", 3, frame, sizeof frame, &len), SS_EINVAL);
    EXPECT(ss_build_frame(SS_FRAME_IP, 9330, "abc", 3, frame, sizeof frame, NULL), SS_EINVAL);

    EXPECT(ss_send_packet(nic, NULL, 64, 0, 1), SS_EINVAL);
    EXPECT(ss_run_for_ns(nic, UINT64_MAX), SS_ELIMIT);
    EXPECT(ss_now_ns(nic, NULL), SS_EINVAL);
    EXPECT(ss_run_until_idle(NULL), SS_EINVAL);

    ss_event ev;
    ss_report r;
    size_t n;
    char text[8];
    EXPECT(ss_next_event(nic, NULL), SS_EINVAL);
    EXPECT(ss_next_event(NULL, &ev), SS_EINVAL);
    EXPECT(ss_get_report(nic, NULL), SS_EINVAL);
    EXPECT(ss_get_report(NULL, &r), SS_EINVAL);
    EXPECT(ss_poll_notifications(nic, NULL, 4, &n), SS_EINVAL);
    EXPECT(ss_poll_notifications(nic, NULL, 0, NULL), SS_EINVAL);
    EXPECT(ss_respond(nic, 777, 1), SS_EINVAL);
    EXPECT(ss_hpu_stdout(nic, 100000, text, sizeof text, &n), SS_EINVAL);
    EXPECT(ss_hpu_stdout(nic, 0, NULL, 8, &n), SS_EINVAL);
    EXPECT(ss_report_text(nic, NULL, 8, &n), SS_EINVAL);
}

/* A packet larger than a packet-buffer slot: ss_send_packet refuses it at
 * the call; one from the generator is refused when it arrives. */
static void test_sim_error(void)
{
    ss_nic *nic;
    ss_image *img;
    ss_ectx e;
    ss_ectx_options o;
    ss_nic_info info;
    REQUIRE(ss_open("pspin", &nic));
    REQUIRE(ss_nic_get_info(nic, &info));
    REQUIRE(ss_image_load(nic, elf, &img));
    ss_ectx_options_init(&o);
    o.ph = "count_ph";
    REQUIRE(ss_install(nic, img, &o, &e));
    REQUIRE(ss_activate(nic, e));
    size_t big = info.pkt_slot_size + 100, len;
    uint8_t *payload = calloc(1, big), *frame = malloc(big + 64);
    REQUIRE(ss_build_frame(SS_FRAME_IP, 9330, payload, big, frame, big + 64, &len));
    EXPECT(ss_send_packet(nic, frame, len, 0, 1), SS_ELIMIT);
    CHECK(strstr(ss_last_error(), "pkt_slot_size") != NULL);
    OK(ss_run_until_idle(nic));
    ss_gen_config g;
    OK(ss_gen_config_init(&g));
    g.size = (uint32_t)big;
    OK(ss_feed_generator(nic, &g));
    EXPECT(ss_run_until_idle(nic), SS_ESIM);
    CHECK(strstr(ss_last_error(), "pkt_slot_size") != NULL);
    free(payload);
    free(frame);
    ss_image_free(img);
    ss_close(nic);
}

/* ----------------------------------------------------------------- success */

#define N 24        /* packets of the api_ph message */
#define CHUNK 64    /* UDP payload bytes per packet */
#define PORT 7000

static void test_success(void)
{
    ss_nic *nic;
    ss_image *img;
    ss_ectx e;
    ss_ectx_options o;
    static uint8_t host[8192]; /* lent: 64 B per packet, then 8 B slots at 4096 */
    ss_host_window w;
    REQUIRE(ss_open("pspin", &nic));
    REQUIRE(ss_image_load(nic, elf, &img));
    REQUIRE(ss_host_lend(nic, host, sizeof host, &w));

    ss_ectx_options_init(&o);
    o.name = "api";
    o.ph = "api_ph";
    o.host_window = w;
    o.handler_mem_size = 4096;
    o.udp_dst_port = PORT;
    REQUIRE(ss_install(nic, img, &o, &e));

    /* Globals: magic by symbol, table through a NIC pointer. */
    uint32_t magic_at, table_at, table, vals[N], back = 0;
    REQUIRE(ss_image_symbol(img, "magic", &magic_at));
    REQUIRE(ss_image_symbol(img, "table", &table_at));
    uint32_t magic = 77;
    OK(ss_nic_write(nic, magic_at, &magic, 4));
    OK(ss_nic_read(nic, magic_at, &back, 4));
    CHECK(back == 77);
    REQUIRE(ss_nic_alloc(nic, e, sizeof vals, 64, &table));
    CHECK(table % 64 == 0);
    for (uint32_t i = 0; i < N; i++)
        vals[i] = i * i + 5;
    OK(ss_nic_write(nic, table, vals, sizeof vals));
    OK(ss_nic_write_ptr(nic, table_at, table));

    /* One message: chunk k starts with index k, then bytes of our own. */
    static uint8_t payload[N * CHUNK];
    for (uint32_t k = 0; k < N; k++) {
        uint8_t *c = payload + k * CHUNK;
        memcpy(c, &k, 4); /* little-endian host */
        for (uint32_t j = 4; j < CHUNK; j++)
            c[j] = (uint8_t)(k * 31 + j * 7 + 1);
    }
    OK(ss_activate(nic, e));
    OK(ss_send_message(nic, e, 5, payload, sizeof payload, 28 + CHUNK));
    OK(ss_run_until_idle(nic));
    double now = 0;
    OK(ss_now_ns(nic, &now));
    CHECK(now > 0);

    /* Host memory, in place. */
    CHECK(memcmp(host, payload, sizeof payload) == 0);
    for (uint32_t i = 0; i < N; i++)
        CHECK(le64(host + 4096 + 8 * i) == 77ull * 1000 + vals[i]);

    /* Events. */
    int outbound = 0, writes = 0, done = 0, seen[N] = {0};
    ss_event ev;
    for (;;) {
        OK(ss_next_event(nic, &ev));
        if (ev.kind == SS_EVENT_NONE)
            break;
        CHECK(ev.ectx == e);
        if (ev.kind == SS_EVENT_OUTBOUND) {
            uint8_t expect[28 + CHUNK];
            size_t len;
            uint32_t k = le32(ev.data + 28);
            CHECK(k < N && ev.data_len == 28 + CHUNK && ev.dest == 0);
            if (k < N) {
                seen[k]++;
                OK(ss_build_frame(SS_FRAME_IP, PORT, payload + k * CHUNK, CHUNK, expect, sizeof expect, &len));
                CHECK(len == ev.data_len && memcmp(expect, ev.data, len) == 0);
            }
            outbound++;
        } else if (ev.kind == SS_EVENT_HOST_WRITE) {
            uint64_t i = (ev.addr - w.base - 4096) / 8;
            CHECK(i < N && ev.value == 77ull * 1000 + vals[i]);
            writes++;
        } else if (ev.kind == SS_EVENT_MESSAGE_DONE) {
            CHECK(ev.msg_id == 5);
            done++;
        } else {
            fprintf(stderr, "unexpected event %u: %s %s\n", ev.kind, ev.handler ? ev.handler : "", ev.cause ? ev.cause : "");
            CHECK(0);
        }
    }
    CHECK(outbound == N && writes == N && done == 1);
    for (int i = 0; i < N; i++)
        CHECK(seen[i] == 1);

    /* Statistics. */
    ss_report r;
    OK(ss_get_report(nic, &r));
    CHECK(r.packets == N && r.packets_in == N && r.outbound_packets == N && r.host_writes == N);
    CHECK(r.dma_to_host_bytes == N * CHUNK && r.errors == 0 && r.drops == 0);
    CHECK(r.latency_min_ns > 0 && r.latency_min_ns <= r.latency_p50_ns && r.latency_p99_ns <= r.latency_max_ns);
    CHECK(r.throughput_gbps > 0 && r.sim_time_ns > 0);
    uint64_t p = 0, m = 0;
    OK(ss_ectx_counts(nic, e, &p, &m));
    CHECK(p == N && m == 1);
    ss_counter cs[4];
    size_t n = 0;
    OK(ss_counters(nic, e, NULL, 0, &n));
    CHECK(n == 1);
    OK(ss_counters(nic, e, cs, 4, &n));
    CHECK(n == 1 && cs[0].index == 3 && cs[0].count == N && cs[0].sum == N * (N - 1) / 2);

    /* printf output: one line per packet over all HPUs. */
    ss_nic_info info;
    OK(ss_nic_get_info(nic, &info));
    int lines = 0;
    for (uint32_t h = 0; h < info.hpu_count; h++) {
        size_t len = 0;
        OK(ss_hpu_stdout(nic, h, NULL, 0, &len));
        char *s = malloc(len + 1);
        size_t len2 = 0;
        OK(ss_hpu_stdout(nic, h, s, len + 1, &len2));
        CHECK(len2 == len && strlen(s) == len);
        for (char *q = s; (q = strstr(q, "api_ph ")) != NULL; q++)
            lines++;
        free(s);
    }
    CHECK(lines == N);
    size_t tl = 0;
    char small[8];
    OK(ss_report_text(nic, small, sizeof small, &tl));
    CHECK(tl > sizeof small && strlen(small) == sizeof small - 1); /* truncated, terminated */
    char *text = malloc(tl + 1);
    OK(ss_report_text(nic, text, tl + 1, NULL));
    CHECK(strstr(text, "api_ph") != NULL);
    free(text);

    /* A packet to another port is not ours. */
    uint8_t frame[64];
    size_t flen;
    OK(ss_build_frame(SS_FRAME_IP, PORT + 1, payload, 8, frame, sizeof frame, &flen));
    OK(ss_send_packet(nic, frame, flen, 9, 1));
    OK(ss_run_until_idle(nic));
    OK(ss_get_report(nic, &r));
    CHECK(r.unmatched == 1 && r.packets == N);

    OK(ss_deactivate(nic, e));
    OK(ss_uninstall(nic, e));

    /* Notifications: ask_ph asks, we answer index * index + 7. */
    memset(host, 0, sizeof host);
    ss_ectx_options_init(&o);
    o.ph = "ask_ph";
    o.host_window = w;
    ss_ectx ask;
    REQUIRE(ss_install(nic, img, &o, &ask));
    CHECK(ask != e);
    OK(ss_activate(nic, ask));
    for (uint32_t i = 0; i < 4; i++) {
        uint8_t pl[8] = {0};
        memcpy(pl, &i, 4);
        OK(ss_build_frame(SS_FRAME_IP, 9330, pl, sizeof pl, frame, sizeof frame, &flen));
        OK(ss_send_packet(nic, frame, flen, 100 + i, 1));
    }
    int answered = 0;
    for (int round = 0; round < 50 && answered < 4; round++) {
        ss_notification notes[2]; /* small on purpose: the rest waits */
        OK(ss_wait_notifications(nic, notes, 2, &n));
        if (n == 0)
            break;
        for (size_t k = 0; k < n; k++) {
            uint32_t i = le32(notes[k].data);
            CHECK(notes[k].ectx == ask && notes[k].data_len == 4 && notes[k].host_ref == 100 + i);
            OK(ss_respond(nic, notes[k].id, (uint64_t)i * i + 7));
            EXPECT(ss_respond(nic, notes[k].id, 0), SS_EINVAL); /* answered already */
            answered++;
        }
    }
    OK(ss_run_until_idle(nic));
    CHECK(answered == 4);
    for (uint32_t i = 0; i < 4; i++)
        CHECK(le64(host + 8 * i) == (uint64_t)i * i + 7);
    OK(ss_deactivate(nic, ask));
    while (ss_next_event(nic, &ev) == SS_OK && ev.kind != SS_EVENT_NONE) {
    }
    OK(ss_uninstall(nic, ask));

    /* Generator and trace into count_ph: the count is read from NIC memory. */
    ss_ectx_options_init(&o);
    o.ph = "count_ph";
    ss_ectx cnt;
    REQUIRE(ss_install(nic, img, &o, &cnt));
    OK(ss_activate(nic, cnt));
    ss_gen_config g;
    ss_gen_config_init(&g);
    g.messages = 3;
    g.packets_per_message = 5;
    g.size = 256;
    g.payload = SS_PAYLOAD_RANDOM;
    g.seed = 42;
    OK(ss_feed_generator(nic, &g));
    OK(ss_run_until_idle(nic));
    char path[600];
    snprintf(path, sizeof path, "%s/ok.trace", tmpdir);
    write_file(path, "# src dst size ipg msgid is_last\n1 2 128 10 50 0\n1 2 128 10 50 1\n");
    OK(ss_feed_trace(nic, path, SS_FRAME_IP));
    OK(ss_run_until_idle(nic));
    uint32_t counted_at, counted = 0;
    REQUIRE(ss_image_symbol(img, "counted", &counted_at));
    OK(ss_nic_read(nic, counted_at, &counted, 4));
    CHECK(counted == 3 * 5 + 2);
    OK(ss_ectx_counts(nic, cnt, &p, &m));
    if (p != 17 || m != 4)
        fprintf(stderr, "count_ph ECTX counts: %llu packets, %llu messages\n", (unsigned long long)p, (unsigned long long)m);
    CHECK(p == 17 && m == 4); /* nothing inherited from earlier ECTXs */
    OK(ss_counters(nic, cnt, NULL, 0, &n));
    CHECK(n == 0);
    OK(ss_deactivate(nic, cnt));
    OK(ss_uninstall(nic, cnt));

    /* A faulting handler is an event, not a failed call. */
    ss_ectx_options_init(&o);
    o.name = "faulty";
    o.ph = "bad_ph";
    ss_ectx bad;
    REQUIRE(ss_install(nic, img, &o, &bad));
    OK(ss_activate(nic, bad));
    OK(ss_send_packet(nic, frame, flen, 1, 1));
    OK(ss_run_until_idle(nic));
    int errors = 0;
    while (ss_next_event(nic, &ev) == SS_OK && ev.kind != SS_EVENT_NONE) {
        if (ev.kind == SS_EVENT_HANDLER_ERROR) {
            CHECK(ev.ectx == bad && strcmp(ev.handler, "bad_ph") == 0 && strcmp(ev.ectx_name, "faulty") == 0);
            CHECK(strlen(ev.cause) > 0 && ev.addr == 0x40);
            errors++;
        }
    }
    CHECK(errors == 1);
    OK(ss_get_report(nic, &r));
    CHECK(r.errors == 1);

    OK(ss_image_free(img)); /* the ECTX keeps its own copy */
    OK(ss_send_packet(nic, frame, flen, 2, 1));
    OK(ss_run_until_idle(nic));
    OK(ss_get_report(nic, &r));
    CHECK(r.errors == 2);
    OK(ss_close(nic)); /* with a lent buffer still registered: not freed */
    host[0] = 1;
}

/* Sizes beyond their limits are error codes that leave the NIC usable (they
 * aborted or panicked before); install takes only windows this NIC made,
 * exactly as made (an enlarged one reached another tenant's buffer). */
static void test_boundary(void)
{
    ss_nic *nic;
    ss_image *img;
    ss_host_window w, a, b, forged;
    ss_ectx_options o;
    ss_ectx e;
    static uint8_t bufa[4096], bufb[4096];
    uint8_t back[16];
    uint32_t addr, one = 64;
    double t;

    CHECK(strcmp(ss_strerror(SS_ELIMIT), "SS_ELIMIT") == 0);
    REQUIRE(ss_open("pspin", &nic));
    EXPECT(ss_host_window_create(nic, SIZE_MAX, &w), SS_ELIMIT);
    CHECK(strstr(ss_last_error(), "MAX_HOST_WINDOW") != NULL);
    EXPECT(ss_host_window_create(nic, (size_t)1 << 40, &w), SS_ELIMIT);
    EXPECT(ss_host_read(nic, 0, back, (size_t)1 << 40), SS_EHOST);
    OK(ss_host_window_create(nic, 64, &w));
    EXPECT(ss_host_read(nic, w.base, back, (size_t)1 << 40), SS_EHOST);
    EXPECT(ss_host_write(nic, w.base, back, (size_t)1 << 40), SS_EHOST);
    OK(ss_host_write(nic, w.base, "usable", 6));
    OK(ss_host_read(nic, w.base, back, 6));
    CHECK(memcmp(back, "usable", 6) == 0);
    EXPECT(ss_run_for_ns(nic, UINT64_MAX), SS_ELIMIT);
    OK(ss_now_ns(nic, &t));

    REQUIRE(ss_image_load(nic, elf, &img));
    OK(ss_host_lend(nic, bufa, sizeof bufa, &a));
    OK(ss_host_lend(nic, bufb, sizeof bufb, &b));
    OK(ss_ectx_options_init(&o));
    o.ph = "api_ph";
    forged = a;
    forged.size = b.base - a.base + b.size; /* A's window enlarged over B's buffer */
    o.host_window = forged;
    EXPECT(ss_install(nic, img, &o, &e), SS_EHOST);
    forged = a;
    forged.size += 1;
    o.host_window = forged;
    EXPECT(ss_install(nic, img, &o, &e), SS_EHOST);
    forged = b;
    forged.base += 8;
    forged.size = 8;
    o.host_window = forged;
    EXPECT(ss_install(nic, img, &o, &e), SS_EHOST);
    o.host_window = a;
    o.scratchpad = &one;
    o.scratchpad_len = SIZE_MAX; /* read as an array before: a crash */
    EXPECT(ss_install(nic, img, &o, &e), SS_EINVAL);
    o.scratchpad_len = 1;
    o.handler_mem_size = 4096;
    OK(ss_install(nic, img, &o, &e));

    OK(ss_image_symbol(img, "magic", &addr));
    EXPECT(ss_nic_read(nic, addr, back, ((size_t)1 << 32) + 16), SS_ENICMEM);
    EXPECT(ss_nic_alloc(nic, e, SIZE_MAX, 8, &addr), SS_ENICMEM);
    EXPECT(ss_nic_alloc(nic, e, 8, (size_t)1 << 40, &addr), SS_ENICMEM);
    EXPECT(ss_send_message(nic, e, 0, "x", 1, (size_t)1 << 40), SS_ELIMIT);
    OK(ss_nic_alloc(nic, e, 8, 8, &addr));
    OK(ss_image_free(img));
    OK(ss_close(nic));
}

/* Events name the handle ss_install returned, also after its engine slot
 * went to another ECTX; a handler error carries its cause as a code. */
static void test_event_ectx(void)
{
    ss_nic *nic;
    ss_image *img;
    ss_ectx_options o;
    ss_ectx first, second;
    ss_event ev;
    uint8_t frame[128];
    size_t flen;
    uint32_t idx = 0;

    REQUIRE(ss_open("pspin", &nic));
    REQUIRE(ss_image_load(nic, elf, &img));
    OK(ss_build_frame(SS_FRAME_IP, 9330, &idx, 4, frame, sizeof frame, &flen));
    OK(ss_ectx_options_init(&o));
    o.ph = "count_ph";
    o.name = "first";
    REQUIRE(ss_install(nic, img, &o, &first));
    OK(ss_activate(nic, first));
    OK(ss_send_packet(nic, frame, flen, 1, 1));
    OK(ss_run_until_idle(nic));
    OK(ss_deactivate(nic, first));
    OK(ss_uninstall(nic, first));
    o.ph = "bad_ph";
    o.name = "second";
    REQUIRE(ss_install(nic, img, &o, &second));
    CHECK(second != first);
    OK(ss_activate(nic, second));
    OK(ss_send_packet(nic, frame, flen, 2, 1));
    OK(ss_run_until_idle(nic));
    int done_first = 0, errors = 0;
    while (ss_next_event(nic, &ev) == SS_OK && ev.kind != SS_EVENT_NONE) {
        if (ev.kind == SS_EVENT_MESSAGE_DONE && ev.msg_id == 1)
            done_first += ev.ectx == first;
        if (ev.kind == SS_EVENT_HANDLER_ERROR) {
            CHECK(ev.ectx == second && strcmp(ev.ectx_name, "second") == 0);
            CHECK(ev.error_cause == SS_CAUSE_STORE_ACCESS);
            errors++;
        } else {
            CHECK(ev.error_cause == SS_CAUSE_NONE);
        }
    }
    CHECK(done_first == 1);
    CHECK(errors == 1);
    OK(ss_image_free(img));
    OK(ss_close(nic));
}

/* Handler errors keep coming for as long as the NIC runs: three rounds of
 * 600 faulting packets give 600 error events each (the engine keeps the
 * details of only its first 1000 errors for the report). */
static void test_error_rounds(void)
{
    ss_nic *nic;
    ss_image *img;
    ss_ectx_options o;
    ss_ectx bad;
    ss_event ev;
    uint8_t frame[128];
    size_t flen;
    uint32_t idx = 0;
    int total = 0;

    REQUIRE(ss_open("pspin", &nic));
    REQUIRE(ss_image_load(nic, elf, &img));
    OK(ss_build_frame(SS_FRAME_IP, 9330, &idx, 4, frame, sizeof frame, &flen));
    OK(ss_ectx_options_init(&o));
    o.ph = "bad_ph";
    o.name = "rounds";
    REQUIRE(ss_install(nic, img, &o, &bad));
    OK(ss_activate(nic, bad));
    for (uint32_t round = 0; round < 3; round++) {
        for (uint32_t m = 0; m < 600; m++)
            OK(ss_send_packet(nic, frame, flen, round * 600 + m, 1));
        OK(ss_run_until_idle(nic));
        int errors = 0;
        while (ss_next_event(nic, &ev) == SS_OK && ev.kind != SS_EVENT_NONE) {
            if (ev.kind == SS_EVENT_HANDLER_ERROR) {
                CHECK(ev.ectx == bad && ev.msg_id / 600 == round);
                errors++;
            }
        }
        if (errors != 600)
            fprintf(stderr, "round %u: %d error events\n", (unsigned)round, errors);
        CHECK(errors == 600);
        total += errors;
    }
    CHECK(total == 1800);
    /* Left untaken, errors are bounded: the first SS_PENDING_ERRORS_FIRST and
     * the latest SS_PENDING_ERRORS_LATEST, and one SS_EVENT_ERRORS_DROPPED
     * between them counting the rest. */
    uint32_t n = SS_PENDING_ERRORS_FIRST + 400 + SS_PENDING_ERRORS_LATEST;
    for (uint32_t m = 0; m < n; m++)
        OK(ss_send_packet(nic, frame, flen, 10000 + m, 1));
    OK(ss_run_until_idle(nic));
    int before = 0, after = 0, gaps = 0;
    uint64_t dropped = 0;
    while (ss_next_event(nic, &ev) == SS_OK && ev.kind != SS_EVENT_NONE) {
        if (ev.kind == SS_EVENT_ERRORS_DROPPED) {
            gaps++;
            dropped += ev.value;
        } else if (ev.kind == SS_EVENT_HANDLER_ERROR) {
            if (gaps == 0)
                before += ev.msg_id == 10000 + (uint32_t)before;
            else
                after += ev.msg_id == 10000 + n - SS_PENDING_ERRORS_LATEST + (uint32_t)after;
        }
    }
    CHECK(gaps == 1 && dropped == 400);
    CHECK(before == SS_PENDING_ERRORS_FIRST && after == SS_PENDING_ERRORS_LATEST);
    OK(ss_image_free(img));
    OK(ss_close(nic));
}

/* ------------------------------------------------------------------ live */

static ss_nic *live_nic; /* the NIC the SIGALRM handler stops */

static void on_alarm(int sig)
{
    (void)sig;
    ss_stop(live_nic); /* async-signal-safe */
}

/* A UDP port free on 127.0.0.1 right now (bound, read back, released). */
static uint16_t free_udp_port(void)
{
    struct sockaddr_in a = {0};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        perror("free_udp_port");
        exit(2);
    }
    close(fd);
    return ntohs(a.sin_port);
}

/* An SLMP receiver written here from seed 000 §5.1's wire format, in a
 * child process: ACK every SYN segment by echoing its header with the ACK
 * flag, drop the first copy of every 5th segment (the sender must
 * retransmit it), reassemble message 7 by offset, and report on `result`
 * whether it equals the pattern the parent sent. */
#define SLMP_TEST_LEN 100000u
static unsigned char slmp_pattern(size_t i) { return (unsigned char)(i * 131u + (i >> 8)); }

static void slmp_ack_child(int sock, int result)
{
    static unsigned char msg[SLMP_TEST_LEN], seen[SLMP_TEST_LEN / 1000 + 1];
    unsigned char pkt[2048];
    size_t got = 0;
    unsigned n = 0, dropped = 0;
    for (;;) {
        struct sockaddr_in peer;
        socklen_t pl = sizeof peer;
        ssize_t r = recvfrom(sock, pkt, sizeof pkt, 0, (struct sockaddr *)&peer, &pl);
        if (r < 10)
            continue;
        uint16_t flags = (uint16_t)(pkt[0] << 8 | pkt[1]);
        uint32_t mid = (uint32_t)pkt[2] << 24 | (uint32_t)pkt[3] << 16 | (uint32_t)pkt[4] << 8 | pkt[5];
        uint32_t off = (uint32_t)pkt[6] << 24 | (uint32_t)pkt[7] << 16 | (uint32_t)pkt[8] << 8 | pkt[9];
        size_t len = (size_t)r - 10, seg = off / 1000;
        if (mid != 7 || off % 1000 || off + len > SLMP_TEST_LEN)
            continue;
        if (++n % 5 == 0 && !(seen[seg] & 2)) {
            seen[seg] |= 2; /* dropped once */
            dropped++;
            continue;
        }
        if (!(seen[seg] & 1)) {
            seen[seg] |= 1;
            memcpy(msg + off, pkt + 10, len);
            got += len;
            if (got == SLMP_TEST_LEN) {
                /* Verdict, then how many first copies were dropped (each
                 * had to be sent again before the message could complete). */
                char r[2] = {'Y', (char)dropped};
                for (size_t i = 0; i < SLMP_TEST_LEN; i++)
                    if (msg[i] != slmp_pattern(i))
                        r[0] = 'N';
                if (write(result, r, 2) != 2)
                    _exit(1);
            }
        }
        if (flags & 0x4000) {
            pkt[0] = 0x20; /* ACK alone */
            pkt[1] = 0;
            sendto(sock, pkt, 10, 0, (struct sockaddr *)&peer, pl);
        }
    }
}

static void test_slmp_send(void)
{
    ss_slmp_options o;
    ss_slmp_stats st;
    const void *msgs[1];
    size_t lens[1];
    static unsigned char data[SLMP_TEST_LEN];
    for (size_t i = 0; i < SLMP_TEST_LEN; i++)
        data[i] = slmp_pattern(i);
    msgs[0] = data;
    lens[0] = SLMP_TEST_LEN;

    EXPECT(ss_slmp_options_init(NULL), SS_EINVAL);
    OK(ss_slmp_options_init(&o));
    CHECK(o.window == 0 && o.sync == SS_SLMP_SYNC_ALL && o.segment == 1462 && o.give_up_ns == 10000000000ull);
    EXPECT(ss_slmp_send(NULL, msgs, lens, 1, &o, &st), SS_EINVAL);
    EXPECT(ss_slmp_send("no such host.invalid", msgs, lens, 1, &o, &st), SS_EINVAL);
    CHECK(strstr(ss_last_error(), "no such host.invalid") != NULL);
    o.sync = 9;
    EXPECT(ss_slmp_send("127.0.0.1:9", msgs, lens, 1, &o, &st), SS_EINVAL);
    CHECK(strstr(ss_last_error(), "sync") != NULL);
    OK(ss_slmp_options_init(&o));
    o.segment = 0;
    EXPECT(ss_slmp_send("127.0.0.1:9", msgs, lens, 1, &o, &st), SS_EINVAL);
    CHECK(strstr(ss_last_error(), "segment") != NULL);

    int sock = socket(AF_INET, SOCK_DGRAM, 0), pipefd[2];
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    CHECK(sock >= 0 && bind(sock, (struct sockaddr *)&a, al) == 0 && getsockname(sock, (struct sockaddr *)&a, &al) == 0);
    char to[64];
    snprintf(to, sizeof to, "127.0.0.1:%u", ntohs(a.sin_port));

    /* Nothing answers yet: the sender gives up with its statistics. */
    OK(ss_slmp_options_init(&o));
    o.give_up_ns = 300000000ull;
    memset(&st, 0, sizeof st);
    EXPECT(ss_slmp_send(to, msgs, lens, 1, &o, &st), SS_ENET);
    CHECK(strstr(ss_last_error(), "gave up") != NULL);
    CHECK(st.packets_sent >= 4 && st.acks_received == 0 && !st.delivery_confirmed);
    char drain[2048];
    while (recv(sock, drain, sizeof drain, MSG_DONTWAIT) > 0)
        ;

    CHECK(pipe(pipefd) == 0);
    pid_t child = fork();
    if (child == 0) {
        alarm(60); /* never outlives a parent that died early */
        close(pipefd[0]);
        slmp_ack_child(sock, pipefd[1]);
    }
    close(pipefd[1]);
    OK(ss_slmp_options_init(&o));
    o.segment = 1000;
    o.first_msg_id = 7;
    memset(&st, 0, sizeof st);
    OK(ss_slmp_send(to, msgs, lens, 1, &o, &st));
    char verdict[2] = {0, 0};
    CHECK(read(pipefd[0], verdict, 2) == 2 && verdict[0] == 'Y');
    CHECK(st.messages == 1 && st.bytes == SLMP_TEST_LEN && st.segments == 100);
    CHECK(st.delivery_confirmed == 1 && st.acks_received >= 100);
    /* Every segment the child dropped was sent again. */
    CHECK(verdict[1] > 0 && st.retransmitted >= (uint64_t)verdict[1]);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    close(pipefd[0]);
    close(sock);
}

static void test_live_errors(const char *pingpong)
{
    ss_nic *nic = (ss_nic *)&nic;
    ss_attach_options ao;
    OK(ss_attach_options_init(&ao));
    CHECK(ao.mode == SS_MODE_XDP && ao.profile == NULL && ao.config_path == NULL);
    CHECK(ao.wait_timeout_ns == 10000000000ull);
    ao.mode = SS_MODE_SOCKET;

    /* No such interface: SS_ENET naming it, in both modes. */
    EXPECT(ss_nic_attach("ss-no-such0", &ao, &nic), SS_ENET);
    CHECK(nic == NULL);
    CHECK(strstr(ss_last_error(), "ss-no-such0") != NULL);
    EXPECT(ss_nic_attach("ss-no-such0", NULL, &nic), SS_ENET);
    CHECK(strstr(ss_last_error(), "ss-no-such0") != NULL);
    EXPECT(ss_nic_attach(NULL, &ao, &nic), SS_EINVAL);
    EXPECT(ss_nic_attach("lo", &ao, NULL), SS_EINVAL);
    ao.mode = 7;
    EXPECT(ss_nic_attach("lo", &ao, &nic), SS_EINVAL);
    CHECK(strstr(ss_last_error(), "mode 7") != NULL);
    ao.mode = SS_MODE_SOCKET;
    ao.profile = "nope";
    EXPECT(ss_nic_attach("lo", &ao, &nic), SS_ECONFIG);
    ao.config_path = "/nonexistent/nic.toml";
    EXPECT(ss_nic_attach("lo", &ao, &nic), SS_EINVAL); /* both set */
    ao.profile = NULL;
    EXPECT(ss_nic_attach("lo", &ao, &nic), SS_EIO);
    CHECK(nic == NULL);

    /* Live calls on a simulated NIC. */
    ss_live_stats st;
    size_t n;
    int live = -1;
    REQUIRE(ss_open("fpspin", &nic));
    OK(ss_nic_is_live(nic, &live));
    CHECK(live == 0);
    EXPECT(ss_get_live_stats(nic, &st), SS_EINVAL);
    CHECK(strstr(ss_last_error(), "simulated") != NULL);
    ss_live_status ls;
    EXPECT(ss_get_live_status(nic, &ls), SS_EINVAL);
    CHECK(strstr(ss_last_error(), "simulated") != NULL);
    EXPECT(ss_live_drops(nic, NULL, 0, &n), SS_EINVAL);
    EXPECT(ss_run_live(nic, 1000), SS_EINVAL);
    OK(ss_stop(NULL));
    OK(ss_close(nic));

    /* Installing on a live NIC: rules are required and checked. */
    ss_attach_options_init(&ao);
    ao.mode = SS_MODE_SOCKET;
    REQUIRE(ss_nic_attach("lo", &ao, &nic));
    OK(ss_nic_is_live(nic, &live));
    CHECK(live == 1);
    ss_image *img;
    REQUIRE(ss_image_load(nic, pingpong, &img));
    ss_ectx_options o;
    ss_ectx e;
    OK(ss_ectx_options_init(&o));
    CHECK(o.match_specs == NULL && o.match_specs_len == 0 && o.rules_file == NULL && o.rules_toml == NULL);
    o.ph = "pingpong_ph";
    EXPECT(ss_install(nic, img, &o, &e), SS_EINVAL);
    CHECK(strstr(ss_last_error(), "ruleset") != NULL);
    const char *bad[] = {"udp:99999"};
    o.match_specs = bad;
    o.match_specs_len = 1;
    EXPECT(ss_install(nic, img, &o, &e), SS_ENET);
    CHECK(strstr(ss_last_error(), "udp:99999") != NULL);
    o.match_specs = NULL;
    EXPECT(ss_install(nic, img, &o, &e), SS_EINVAL); /* NULL with a length */
    o.match_specs_len = 0;
    o.rules_toml = "[[ruleset]]\nmatch = [\"ip\"]\nectx = \"other\"\n";
    EXPECT(ss_install(nic, img, &o, &e), SS_ENET);
    CHECK(strstr(ss_last_error(), "other") != NULL);
    o.rules_toml = "[[ruleset]]\nmode = \"xor\"\n";
    EXPECT(ss_install(nic, img, &o, &e), SS_ENET);
    o.rules_toml = NULL;
    o.rules_file = "/nonexistent/rules.toml";
    EXPECT(ss_install(nic, img, &o, &e), SS_ENET);
    CHECK(strstr(ss_last_error(), "/nonexistent/rules.toml") != NULL);
    OK(ss_image_free(img));
    OK(ss_close(nic));
}

/* UDP echo on lo in socket mode: datagrams from a kernel socket come back
 * byte-exact from pingpong_ph. */
static void test_live_echo(const char *pingpong)
{
    enum { ECHOES = 24 };
    uint16_t port = free_udp_port();
    char spec[32], rules[256];
    snprintf(spec, sizeof spec, "udp:%u", (unsigned)port);

    ss_attach_options ao;
    ss_attach_options_init(&ao);
    ao.mode = SS_MODE_SOCKET;
    ao.wait_timeout_ns = 100000000; /* 100 ms */
    ss_nic *nic;
    REQUIRE(ss_nic_attach("lo", &ao, &nic));
    ss_image *img;
    REQUIRE(ss_image_load(nic, pingpong, &img));
    ss_ectx_options o;
    ss_ectx e;
    OK(ss_ectx_options_init(&o));
    o.name = "echo";
    o.ph = "pingpong_ph";
    /* The rule from a rules text naming this ECTX, plus one for another
     * ECTX that must be left out. */
    snprintf(rules, sizeof rules,
             "[[ruleset]]\nname = \"mine\"\nmatch = [\"ip\", \"udp\", \"udp_dport:%u\"]\n"
             "ectx = \"echo\"\n"
             "[[ruleset]]\nmatch = [\"ip\"]\nectx = \"someone-else\"\n",
             (unsigned)port);
    o.rules_toml = rules;
    REQUIRE(ss_install(nic, img, &o, &e));
    OK(ss_activate(nic, e));

    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = {0};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {0, 20000};
    CHECK(fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);

    static uint8_t sent[ECHOES][1472], got[2048];
    size_t lens[ECHOES];
    uint32_t x = 12345;
    for (int i = 0; i < ECHOES; i++) {
        lens[i] = i == 0 ? 1 : i == 1 ? 1472 : 1 + (x = x * 1103515245u + 12345u) % 1472;
        for (size_t k = 0; k < lens[i]; k++)
            sent[i][k] = (uint8_t)((x = x * 1103515245u + 12345u) >> 16);
    }
    /* One at a time: send, run the NIC a slice, take the echo. */
    int echoed = 0;
    for (int i = 0; i < ECHOES; i++) {
        CHECK(sendto(fd, sent[i], lens[i], 0, (struct sockaddr *)&to, sizeof to) == (ssize_t)lens[i]);
        ssize_t r = -1;
        for (int tries = 0; tries < 100 && r < 0; tries++) {
            OK(ss_run_live(nic, 10000000)); /* 10 ms */
            r = recv(fd, got, sizeof got, MSG_DONTWAIT);
        }
        if (r == (ssize_t)lens[i] && memcmp(got, sent[i], lens[i]) == 0)
            echoed++;
        else
            fprintf(stderr, "api_test.c: datagram %d (%zu B): echo of %zd B differs\n", i, lens[i], r);
    }
    CHECK(echoed == ECHOES);

    ss_live_stats st;
    OK(ss_get_live_stats(nic, &st));
    CHECK(st.matched == ECHOES);
    CHECK(st.rx_frames >= ECHOES);
    CHECK(st.tx_frames == ECHOES);
    CHECK(st.drops == 0);
    CHECK(st.wall_s > 0);
    /* The status: the same wire counts, and one handler call per echo. */
    ss_live_status ls;
    EXPECT(ss_get_live_status(nic, NULL), SS_EINVAL);
    OK(ss_get_live_status(nic, &ls));
    CHECK(ls.matched == ECHOES && ls.tx_frames == ECHOES && ls.rx_frames == st.rx_frames);
    CHECK(ls.packets == ECHOES && ls.invocations == ECHOES && ls.errors == 0 && ls.drops == 0);
    ss_nic_info info;
    OK(ss_nic_get_info(nic, &info));
    CHECK(ls.hpus == info.hpu_count && ls.hpus_busy <= ls.hpus);
    CHECK(ls.hpu_busy_ps > 0 && ls.nic_time_ps > 0 && ls.wall_s >= st.wall_s);
    size_t ndrops = 99;
    OK(ss_live_drops(nic, NULL, 0, &ndrops));
    CHECK(ndrops == 0);
    ss_report rep;
    OK(ss_get_report(nic, &rep));
    CHECK(rep.packets == ECHOES && rep.outbound_packets == ECHOES && rep.errors == 0);
    char text[1024];
    size_t tlen;
    OK(ss_live_stats_text(nic, text, sizeof text, &tlen));
    CHECK(strstr(text, "socket") != NULL && strstr(text, "tx_frames: 24") != NULL);
    /* Outbound packets are events as in simulation. */
    ss_event ev;
    int outbound = 0;
    do {
        OK(ss_next_event(nic, &ev));
        outbound += ev.kind == SS_EVENT_OUTBOUND;
    } while (ev.kind != SS_EVENT_NONE);
    CHECK(outbound == ECHOES);

    /* A stop requested before the run ends it at once, and is consumed. */
    OK(ss_stop(nic));
    OK(ss_run_live(nic, 0));
    /* ss_stop from a signal handler ends an open-ended run. */
    live_nic = nic;
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
    struct timeval t0, t1;
    gettimeofday(&t0, NULL);
    alarm(1);
    OK(ss_run_live(nic, 0));
    gettimeofday(&t1, NULL);
    double waited = (t1.tv_sec - t0.tv_sec) + (t1.tv_usec - t0.tv_usec) / 1e6;
    CHECK(waited > 0.5 && waited < 5.0);
    signal(SIGALRM, SIG_DFL);

    /* Deactivated: the rule leaves the matcher and the kernel answers
     * nothing (no socket), so no echo comes. */
    OK(ss_deactivate(nic, e));
    CHECK(sendto(fd, "x", 1, 0, (struct sockaddr *)&to, sizeof to) == 1);
    OK(ss_run_live(nic, 50000000));
    CHECK(recv(fd, got, sizeof got, MSG_DONTWAIT) < 0);
    close(fd);
    OK(ss_image_free(img));
    OK(ss_close(nic));
}

/* RMA memory registration on examples/rma_target's image: the table entry
 * byte for byte (docs/rma.md: key, perms, base, size, little-endian), and
 * each refusal. */
static void test_rma_windows(const char *rma)
{
    ss_nic *nic;
    ss_image *img;
    ss_ectx e;
    ss_ectx_options o;
    ss_host_window w;
    uint32_t table;
    uint8_t entry[24];
    static const uint8_t want[24] = {3, 0, 0, 0, 5, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t zero[24];
    REQUIRE(ss_open("fpspin", &nic));
    REQUIRE(ss_image_load(nic, rma, &img));
    REQUIRE(ss_host_window_create(nic, 65536, &w));
    ss_ectx_options_init(&o);
    o.ph = "rma_target_ph";
    o.host_window = w;
    REQUIRE(ss_install(nic, img, &o, &e));
    REQUIRE(ss_image_symbol(img, "rma_windows", &table));
    OK(ss_export_window(nic, e, 3, 0x100, 0x40, 5));
    OK(ss_nic_read(nic, table, entry, sizeof entry));
    CHECK(memcmp(entry, want, sizeof want) == 0);
    EXPECT(ss_export_window(nic, e, 0, 0, 8, 1), SS_EINVAL); /* key 0: free */
    EXPECT(ss_export_window(nic, e, 4, 0, 8, 0), SS_EINVAL); /* no rights */
    EXPECT(ss_export_window(nic, e, 4, 0, 8, 8), SS_EINVAL); /* unknown right */
    EXPECT(ss_export_window(nic, e, 4, 65536 - 4, 8, 1), SS_ELIMIT);
    EXPECT(ss_export_window(nic, e, 4, UINT64_MAX, 2, 1), SS_ELIMIT);
    OK(ss_unexport_window(nic, e, 3));
    OK(ss_nic_read(nic, table, entry, sizeof entry));
    CHECK(memcmp(entry, zero, sizeof zero) == 0);
    EXPECT(ss_unexport_window(nic, e, 3), SS_EINVAL);
    for (uint32_t k = 1; k <= 16; k++)
        OK(ss_export_window(nic, e, k, 0, 8, 7));
    EXPECT(ss_export_window(nic, e, 17, 0, 8, 7), SS_ELIMIT);
    CHECK(strstr(ss_last_error(), "full") != NULL);
    OK(ss_image_free(img));
    OK(ss_close(nic));
}

/* An RMA fetch-and-add-64 request (docs/rma.md "Header") from rank 3 to
 * rank 2, seq 0, adding 5 to the word at offset 0 of key 1: Ethernet, IPv4
 * (checksum filled), UDP (no checksum) to RMA's port 21328, the header, the
 * operand. Returns its length. */
static size_t rma_fadd_frame(uint8_t *f)
{
    static const uint8_t head[42] = {
        2, 0, 0, 0, 0xcc, 2, 2, 0, 0, 0, 0xcc, 1, 0x08, 0x00,                   /* Ethernet */
        0x45, 0, 0, 76, 0, 7, 0x40, 0, 64, 17, 0, 0, 10, 27, 0, 1, 10, 27, 0, 2, /* IPv4 */
        0x9c, 0x40, 0x53, 0x50, 0, 56, 0, 0,                                    /* UDP */
    };
    static const uint8_t rma[56] = {
        1, 0, 4, 0, 0, 3, 0, 2, /* version, DATA, fadd64, status, src 3, dst 2 */
        0, 0, 0, 0, 0, 0, 0, 0, /* seq 0, ack 0 */
        0, 0, 0, 9, 0, 0, 0, 1, /* txn 9, key 1 */
        0, 0, 0, 0, 0, 0, 0, 0, /* offset 0 */
        0, 0, 0, 8, 0, 0, 0, 0, /* length 8, reserved */
        0, 0, 0, 0, 0, 0, 0, 5, /* addend 5 */
        0, 0, 0, 0, 0, 0, 0, 0, /* (a CAS's second operand; not sent) */
    };
    memcpy(f, head, sizeof head);
    memcpy(f + 42, rma, 48);
    uint32_t sum = 0;
    for (int i = 14; i < 34; i += 2)
        sum += (uint32_t)(f[i] << 8 | f[i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    f[24] = (uint8_t)(~sum >> 8);
    f[25] = (uint8_t)~sum;
    return 90;
}

/* options.rma_rank puts the RMA transport in front of the ECTX: a request
 * that arrives twice (the same seq) is served once, the duplicate dropped
 * and counted in the report; without it (-1, the default) both copies are
 * served. Ranks that do not fit 16 bits are refused. */
static void test_rma_transport(const char *rma)
{
    for (int with = 0; with < 2; with++) {
        ss_nic *nic;
        ss_image *img;
        ss_ectx e;
        ss_ectx_options o;
        ss_host_window w;
        uint8_t frame[128], word[8];
        char text[8192];
        REQUIRE(ss_open("fpspin", &nic));
        REQUIRE(ss_image_load(nic, rma, &img));
        REQUIRE(ss_host_window_create(nic, 4096, &w));
        ss_ectx_options_init(&o);
        CHECK(o.rma_rank == -1);
        o.ph = "rma_target_ph";
        o.host_window = w;
        o.rma_rank = 65536;
        EXPECT(ss_install(nic, img, &o, &e), SS_EINVAL);
        CHECK(strstr(ss_last_error(), "rma_rank 65536") != NULL);
        o.rma_rank = -2;
        EXPECT(ss_install(nic, img, &o, &e), SS_EINVAL);
        o.rma_rank = with ? 2 : -1;
        REQUIRE(ss_install(nic, img, &o, &e));
        OK(ss_activate(nic, e));
        OK(ss_export_window(nic, e, 1, 0, 4096, 7));
        size_t len = rma_fadd_frame(frame);
        for (uint32_t m = 0; m < 2; m++) {
            OK(ss_send_packet(nic, frame, len, m, 1));
            OK(ss_run_until_idle(nic));
        }
        OK(ss_host_read(nic, w.base, word, 8));
        CHECK(word[0] == (with ? 5 : 10));
        OK(ss_report_text(nic, text, sizeof text, NULL));
        CHECK((strstr(text, "rma transport      rank 2:") != NULL) == with);
        CHECK(!with || strstr(text, "1 delivered, 1 duplicates") != NULL);
        OK(ss_image_free(img));
        OK(ss_close(nic));
    }
}

/* A cluster's node table: loaded in rank order, errors named, given to a NIC. */
static void test_nodes(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/nodes.toml", tmpdir);
    write_file(path, "[[node]]\nrank = 1\niface = \"eth1\"\nipv4 = \"10.9.8.2\"\nmac = \"02:00:00:00:00:02\"\n"
                     "udp_port = 4242\n\n[[node]]\nrank = 0\niface = \"eth0\"\nipv4 = \"10.9.8.1\"\n"
                     "mac = \"02:00:00:00:00:01\"\nudp_port = 9330\nnetns = \"sCx0\"\n");
    size_t n = 99;
    OK(ss_load_nodes(path, NULL, 0, &n));
    CHECK(n == 2);
    ss_node nodes[3];
    memset(nodes, 0xaa, sizeof nodes);
    OK(ss_load_nodes(path, nodes, 1, &n));
    CHECK(n == 2 && nodes[0].rank == 0 && nodes[1].rank == 0xaaaaaaaau); /* only cap entries */
    OK(ss_load_nodes(path, nodes, 3, &n));
    static const uint8_t ip1[4] = {10, 9, 8, 2}, mac1[6] = {2, 0, 0, 0, 0, 2};
    CHECK(nodes[1].rank == 1 && memcmp(nodes[1].ipv4, ip1, 4) == 0 && memcmp(nodes[1].mac, mac1, 6) == 0);
    CHECK(nodes[1].udp_port == 4242 && strcmp(nodes[1].iface, "eth1") == 0 && nodes[1].netns[0] == 0);
    CHECK(nodes[0].udp_port == 9330 && strcmp(nodes[0].netns, "sCx0") == 0);
    EXPECT(ss_load_nodes(path, NULL, 1, &n), SS_EINVAL);
    EXPECT(ss_load_nodes("/nonexistent/nodes.toml", nodes, 3, &n), SS_EIO);

    ss_nic *nic;
    REQUIRE(ss_open("pspin", &nic));
    OK(ss_nic_set_node_table(nic, path, 1));
    EXPECT(ss_nic_set_node_table(nic, path, 2), SS_EINVAL);
    CHECK(strstr(ss_last_error(), "rank 2 is not in the node table") != NULL);
    OK(ss_close(nic));

    write_file(path, "[[node]]\nrank = 0\niface = \"eth0\"\nipv4 = \"10.9.8.1\"\nmac = \"02:00:00:00:00\"\nudp_port = 1\n");
    EXPECT(ss_load_nodes(path, nodes, 3, &n), SS_EINVAL);
    CHECK(strstr(ss_last_error(), "nodes.toml:5: `mac`") != NULL);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s HANDLERS.elf TMPDIR PINGPONG.elf RMA_TARGET.elf\n", argv[0]);
        return 2;
    }
    elf = argv[1];
    snprintf(tmpdir, sizeof tmpdir, "%s", argv[2]);

    ss_nic *nic;
    test_library();
    test_open_errors();
    REQUIRE(ss_open("pspin", &nic));
    test_image_errors(nic);
    test_ectx_errors(nic);
    test_memory_errors(nic);
    test_traffic_errors(nic);
    OK(ss_close(nic));
    test_sim_error();
    test_success();
    test_boundary();
    test_event_ectx();
    test_error_rounds();
    test_nodes();
    test_live_errors(argv[3]);
    test_live_echo(argv[3]);
    test_slmp_send();
    test_rma_windows(argv[4]);
    test_rma_transport(argv[4]);

    printf("api_test: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
