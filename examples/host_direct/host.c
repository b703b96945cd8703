/*
 * host_direct, the host side: send 4 messages of 64 packets, each packet
 * carrying its slot number and 508 bytes of data; handlers write a 64-bit
 * digest per packet into our array with host-direct writes. We compute
 * every digest here and compare the array slot by slot, and every
 * host-write event too. Exits 1 on any mismatch.
 *
 * usage: host HANDLER.elf [--sabotage]   (--sabotage: expect one wrong digest, so
 *        the check must fail; the tests use it to prove the check bites)
 */
#include <softspin.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MESSAGES 4
#define PER_MSG 64
#define SLOTS (MESSAGES * PER_MSG)
#define PACKET 540 /* frame bytes: 28 header bytes + 512 of UDP payload */
#define PAYLOAD (PACKET - 28)

#define SS(call)                                                                         \
    do {                                                                                 \
        int rc_ = (call);                                                                \
        if (rc_ != SS_OK) {                                                              \
            fprintf(stderr, "%s: %s: %s\n", #call, ss_strerror(rc_), ss_last_error());   \
            exit(2);                                                                     \
        }                                                                                \
    } while (0)

static uint64_t digests[SLOTS]; /* lent to the NIC: handlers write here */
static uint64_t expect[SLOTS];
static uint8_t message[PER_MSG * PAYLOAD];

static uint64_t fnv1a64(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
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
    SS(ss_host_lend(nic, digests, sizeof digests, &win));
    SS(ss_ectx_options_init(&o));
    o.ph = "digest_ph";
    o.host_window = win;
    SS(ss_install(nic, img, &o, &ectx));
    SS(ss_activate(nic, ectx));

    /* A message's payload is its packets' UDP payloads back to back:
     * ss_send_message cuts it every PAYLOAD bytes. */
    for (uint32_t m = 0; m < MESSAGES; m++) {
        for (uint32_t k = 0; k < PER_MSG; k++) {
            uint8_t *p = message + k * PAYLOAD;
            uint32_t slot = m * PER_MSG + k;
            memcpy(p, &slot, 4); /* little-endian host */
            for (uint32_t i = 4; i < PAYLOAD; i++)
                p[i] = (uint8_t)(slot * 131 + i * i);
            expect[slot] = fnv1a64(p, PAYLOAD);
        }
        SS(ss_send_message(nic, ectx, m, message, sizeof message, PACKET));
        SS(ss_run_until_idle(nic));
    }
    if (sabotage)
        expect[SLOTS / 3] ^= 1;

    int ok = 1, writes = 0;
    ss_event ev;
    for (;;) {
        SS(ss_next_event(nic, &ev));
        if (ev.kind == SS_EVENT_NONE)
            break;
        if (ev.kind == SS_EVENT_HOST_WRITE) {
            uint64_t slot = (ev.addr - win.base) / 8;
            if (ev.addr < win.base || slot >= SLOTS || (ev.addr - win.base) % 8 || ev.value != expect[slot]) {
                fprintf(stderr, "mismatch: host write of 0x%016llx at 0x%llx\n", (unsigned long long)ev.value,
                        (unsigned long long)ev.addr);
                ok = 0;
            }
            writes++;
        } else if (ev.kind == SS_EVENT_HANDLER_ERROR) {
            fprintf(stderr, "handler error: %s in %s at pc 0x%08x\n", ev.cause, ev.handler, ev.pc);
            ok = 0;
        }
    }
    for (int s = 0; s < SLOTS; s++)
        if (digests[s] != expect[s]) {
            fprintf(stderr, "mismatch: slot %d holds 0x%016llx, expected 0x%016llx\n", s,
                    (unsigned long long)digests[s], (unsigned long long)expect[s]);
            ok = 0;
        }
    if (writes != SLOTS) {
        fprintf(stderr, "mismatch: %d host writes for %d packets\n", writes, SLOTS);
        ok = 0;
    }

    ss_report r;
    SS(ss_get_report(nic, &r));
    printf("host_direct: %d packets of %d B, one 64-bit digest each, %d host-direct writes\n", SLOTS, PACKET,
           writes);
    printf("  NIC: %.1f Gbit/s, %.2f Mpkt/s, HPU utilisation %.1f %%\n", r.throughput_gbps, r.mpps,
           r.hpu_utilization * 100);
    printf("  latency ns: min %.1f  mean %.1f  p50 %.1f  p99 %.1f  max %.1f\n", r.latency_min_ns,
           r.latency_mean_ns, r.latency_p50_ns, r.latency_p99_ns, r.latency_max_ns);
    if (ok)
        printf("host_direct: all %d digests match the ones computed on the host\n", SLOTS);
    else
        fprintf(stderr, "host_direct: FAILED\n");

    ss_image_free(img);
    ss_close(nic);
    return !ok;
}
