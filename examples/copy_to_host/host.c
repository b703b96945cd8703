/*
 * copy_to_host, the host side: lend the NIC a buffer, send 3 messages of
 * 64 KiB in 1024-byte packets, and check that the buffer holds exactly what
 * was sent. Exits 1 on any mismatch.
 *
 * usage: host HANDLER.elf [--sabotage]   (--sabotage: expect one wrong byte, so
 *        the check must fail; the tests use it to prove the check bites)
 */
#include <softspin.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MESSAGES 3
#define MSG_SIZE (64 * 1024)
#define PACKET 1024                   /* frame bytes, headers included */
#define IP_UDP 28                     /* PsPIN IP/UDP headers before the payload */
#define APP 4                         /* our header: the offset in the message */
#define DATA (PACKET - IP_UDP - APP)  /* message bytes per packet: 992 */
#define PACKETS_PER_MSG ((MSG_SIZE + DATA - 1) / DATA)

/* Any failing call ends the program with its code and message. */
#define SS(call)                                                                         \
    do {                                                                                 \
        int rc_ = (call);                                                                \
        if (rc_ != SS_OK) {                                                              \
            fprintf(stderr, "%s: %s: %s\n", #call, ss_strerror(rc_), ss_last_error());   \
            exit(2);                                                                     \
        }                                                                                \
    } while (0)

static uint8_t sent[MESSAGES][MSG_SIZE];
static uint8_t host_mem[MESSAGES * MSG_SIZE]; /* lent to the NIC, used in place */
/* What ss_send_message gets: every DATA bytes preceded by their offset. */
static uint8_t wire[PACKETS_PER_MSG * (APP + DATA)];

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint8_t next_byte(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint8_t)(rng >> 24);
}

int main(int argc, char **argv)
{
    const char *elf = argc > 1 ? argv[1] : "handler.elf";
    int sabotage = argc > 2 && strcmp(argv[2], "--sabotage") == 0;

    ss_nic *nic;
    ss_image *img;
    ss_host_window win;
    ss_ectx ectx;
    ss_ectx_options o;
    SS(ss_open("pspin", &nic));
    SS(ss_image_load(nic, elf, &img));
    SS(ss_host_lend(nic, host_mem, sizeof host_mem, &win));
    SS(ss_ectx_options_init(&o));
    o.ph = "copy_ph";
    o.host_window = win;
    SS(ss_install(nic, img, &o, &ectx));

    uint32_t stride = MSG_SIZE, stride_at;
    SS(ss_image_symbol(img, "msg_stride", &stride_at));
    SS(ss_nic_write(nic, stride_at, &stride, sizeof stride));
    SS(ss_activate(nic, ectx));

    /* Messages go out back to back at the line rate (ss_send_message paces
     * its packets from the NIC's current time). */
    size_t packets = 0;
    for (uint32_t m = 0; m < MESSAGES; m++) {
        for (size_t i = 0; i < MSG_SIZE; i++)
            sent[m][i] = next_byte();
        size_t w = 0;
        for (uint32_t off = 0; off < MSG_SIZE; off += DATA) {
            size_t n = MSG_SIZE - off < DATA ? MSG_SIZE - off : DATA;
            memcpy(wire + w, &off, APP); /* little-endian, as the handler reads it */
            memcpy(wire + w + APP, sent[m] + off, n);
            w += APP + n;
            packets++;
        }
        SS(ss_send_message(nic, ectx, m, wire, w, PACKET));
        SS(ss_run_until_idle(nic));
    }

    /* What the handlers did besides: every message completed, no errors. */
    ss_event ev;
    int done = 0, errors = 0;
    for (;;) {
        SS(ss_next_event(nic, &ev));
        if (ev.kind == SS_EVENT_NONE)
            break;
        if (ev.kind == SS_EVENT_MESSAGE_DONE)
            done++;
        if (ev.kind == SS_EVENT_HANDLER_ERROR) {
            fprintf(stderr, "handler error: %s in %s at pc 0x%08x\n", ev.cause, ev.handler, ev.pc);
            errors++;
        }
    }

    if (sabotage)
        sent[1][12345] ^= 0x40;
    int bad = done != MESSAGES || errors != 0;
    for (uint32_t m = 0; m < MESSAGES; m++) {
        for (size_t i = 0; i < MSG_SIZE; i++) {
            if (host_mem[m * MSG_SIZE + i] != sent[m][i]) {
                fprintf(stderr, "mismatch: message %u byte %zu: host memory has 0x%02x, sent 0x%02x\n", m, i,
                        host_mem[m * MSG_SIZE + i], sent[m][i]);
                bad = 1;
                break;
            }
        }
    }

    ss_report r;
    SS(ss_get_report(nic, &r));
    printf("copy_to_host: %d messages of %d B in %zu packets of %d B (%d B of data each)\n", MESSAGES, MSG_SIZE,
           packets, PACKET, DATA);
    printf("  messages completed %d, handler errors %d, %llu B DMAed to the host\n", done, errors,
           (unsigned long long)r.dma_to_host_bytes);
    printf("  NIC: %llu packets, %.1f Gbit/s, %.2f Mpkt/s, HPU utilisation %.1f %%\n",
           (unsigned long long)r.packets, r.throughput_gbps, r.mpps, r.hpu_utilization * 100);
    printf("  latency ns: min %.1f  mean %.1f  p50 %.1f  p99 %.1f  max %.1f\n", r.latency_min_ns,
           r.latency_mean_ns, r.latency_p50_ns, r.latency_p99_ns, r.latency_max_ns);
    if (bad) {
        fprintf(stderr, "copy_to_host: FAILED\n");
    } else {
        printf("copy_to_host: host buffer matches the %d messages byte for byte\n", MESSAGES);
    }

    ss_image_free(img);
    ss_close(nic);
    return bad;
}
