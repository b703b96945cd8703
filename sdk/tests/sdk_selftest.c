/*
 * Bare-metal self-test of the SDK headers (spin.h): layouts, byte order,
 * IP checksum, atomics, locks, counters and the NULL/error handling of the
 * command wrappers.  Prints one line per group and exits non-zero on the
 * first failed check.  Runs under qemu-riscv32 or `softspin isa run`; the
 * sPIN services are not provided there, so commands must fail cleanly.
 */
#include <spin.h>
#include <stddef.h>
#include <string.h>

static int failed;

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond)) {                                                        \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);            \
            failed++;                                                         \
        }                                                                     \
    } while (0)

static uint8_t pkt[64] __attribute__((aligned(4)));
static volatile uint32_t shared_word;
static spin_lock_t lock;
static spin_rw_lock_t rwlock;
static spin_counter_t counter;

static void test_layouts(void)
{
    CHECK(sizeof(ip_hdr_t) == 20);
    CHECK(sizeof(udp_hdr_t) == 8);
    CHECK(sizeof(pkt_hdr_t) == 28);
    CHECK(sizeof(task_t) == 40 + 8 * NB_CLUSTERS);
    CHECK(offsetof(task_t, scratchpad) == 16);
    CHECK(offsetof(task_t, host_mem_high) == 16 + 8 * NB_CLUSTERS);
    CHECK(offsetof(task_t, flow_id) == 36 + 8 * NB_CLUSTERS);
    CHECK(sizeof(handler_args_t) == 16);
    CHECK(sizeof(eth_hdr_t) == 14);
    CHECK(sizeof(ipv4_hdr_t) == 20);
    CHECK(sizeof(slmp_hdr_t) == 10);
    CHECK(offsetof(slmp_hdr_t, offset) == 6);
    CHECK(sizeof(slmp_pkt_hdr_t) == 14 + 20 + 8 + 10);
    printf("layouts: task_t=%u slmp_pkt_hdr_t=%u\n", (unsigned)sizeof(task_t),
           (unsigned)sizeof(slmp_pkt_hdr_t));
}

static void test_packets(void)
{
    /* PsPIN bit-field order: ihl is the high nibble of byte 0. */
    pkt_hdr_t *h = (pkt_hdr_t *)pkt;
    memset(pkt, 0, sizeof pkt);
    pkt[0] = 0x54;              /* ihl = 5, version = 4 */
    h->ip_hdr.length = 20 + 8 + 12;
    CHECK(h->ip_hdr.ihl == 5 && h->ip_hdr.version == 4);
    uint8_t *pld;
    uint32_t len;
    GET_IP_UDP_PLD(pkt, pld, len);
    CHECK(len == 12);
    CHECK(pld == pkt + 28);

    CHECK(bswap16(0x1234) == 0x3412);
    CHECK(bswap32(0x12345678u) == 0x78563412u);
    CHECK(htons(0x0800) == 0x0008 && ntohl(htonl(0xdeadbeefu)) == 0xdeadbeefu);

    /* RFC 1071 example header (checksum 0xb861 on the wire). */
    static uint8_t ip[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40,
                             0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
                             0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
    ipv4_hdr_t *v4 = (ipv4_hdr_t *)ip;
    v4->checksum = ip_checksum(ip, sizeof ip);
    CHECK(ip[10] == 0xb8 && ip[11] == 0x61);
    CHECK(ip_checksum(ip, sizeof ip) == 0);
    CHECK(IPV4_VERSION(v4) == 4 && IPV4_HDR_LEN(v4) == 20);
    CHECK(ntohs(v4->length) == 0x73);

    slmp_hdr_t s;
    s.flags = htons(SLMP_FLAG_EOM | SLMP_FLAG_SYN);
    s.msg_id = htonl(7);
    s.pkt_off = htonl(1024);
    CHECK(SLMP_EOM(ntohs(s.flags)) && SLMP_SYN(ntohs(s.flags)) &&
          !SLMP_ACK(ntohs(s.flags)));
    CHECK(ntohl(s.offset) == 1024);
    printf("packets: ip checksum %02x%02x\n", ip[10], ip[11]);
}

static void test_atomics(void)
{
    shared_word = 5;
    CHECK(amo_add((volatile int32_t *)&shared_word, -7) == 5);
    CHECK(shared_word == (uint32_t)-2);
    CHECK(amo_maxu(&shared_word, 3) == (uint32_t)-2 && shared_word == (uint32_t)-2);
    CHECK(amo_max((volatile int32_t *)&shared_word, 3) == -2 && shared_word == 3);
    CHECK(amo_min((volatile int32_t *)&shared_word, -9) == 3 &&
          (int32_t)shared_word == -9);
    CHECK(amo_minu(&shared_word, 4) == (uint32_t)-9 && shared_word == 4);
    CHECK(amo_and(&shared_word, 6) == 4 && shared_word == 4);
    CHECK(amo_or(&shared_word, 3) == 4 && shared_word == 7);
    CHECK(amo_xor(&shared_word, 5) == 7 && shared_word == 2);
    CHECK(amo_swap(&shared_word, 11) == 2 && shared_word == 11);
    amo_store(&shared_word, 12);
    CHECK(shared_word == 12);
    CHECK(compare_and_swap(&shared_word, 12, 13) == 0 && shared_word == 13);
    CHECK(compare_and_swap(&shared_word, 12, 14) == -1 && shared_word == 13);
    CHECK(load_reserved(&shared_word) == 13);
    CHECK(store_conditional(&shared_word, 15) == 0 && shared_word == 15);
    CHECK(store_conditional(&shared_word, 16) != 0 && shared_word == 15);

    spin_lock_init(&lock);
    CHECK(spin_lock_try_lock(&lock) == 1);
    CHECK(spin_lock_try_lock(&lock) == 0);
    spin_lock_unlock(&lock);
    CHECK(spin_lock_lock(&lock) == SPIN_OK && lock == 1);
    spin_lock_unlock(&lock);
    CHECK(lock == 0);

    spin_lock_init(&rwlock.glock);
    rwlock.num_readers = 0;
    spin_rw_lock_r_lock(&rwlock);
    spin_rw_lock_r_lock(&rwlock);
    CHECK(rwlock.num_readers == 2 && rwlock.glock == 1);
    spin_rw_lock_r_unlock(&rwlock);
    spin_rw_lock_r_unlock(&rwlock);
    CHECK(rwlock.num_readers == 0 && rwlock.glock == 0);
    spin_rw_lock_w_lock(&rwlock);
    CHECK(spin_lock_try_lock(&rwlock.glock) == 0);
    spin_rw_lock_w_unlock(&rwlock);

    push_counter(&counter, 10);
    push_counter(&counter, 32);
    CHECK(counter.sum == 42 && counter.count == 2);
    printf("atomics: ok\n");
}

static void test_commands(void)
{
    /* Whatever the embedding answers, a failure must not write outputs and
     * a success must; NULL out-pointers must be accepted. */
    spin_cmd_t h = 0xaaaaaaaau;
    int r = spin_send_packet(pkt, 16, &h);
    CHECK(r == SPIN_OK ? h != 0xaaaaaaaau : h == 0xaaaaaaaau);
    CHECK(r == SPIN_OK || r == SPIN_FAIL);
    spin_dma_t d = 0x55555555u;
    CHECK(spin_dma(pkt, pkt + 32, 0, SPIN_DMA_EXT2LOC, 0, &d) == SPIN_FAIL);
    CHECK(d == 0x55555555u);
    spin_send_packet(pkt, 16, NULL);
    spin_write_to_host(0x1234ull << 32, 1, NULL);
    spin_host_write(0, 1, false);
    spin_dma_to_host(0, (uint32_t)pkt, 4, true, NULL);
    spin_dma_from_host(0, (uint32_t)pkt, 4, false, NULL);
    spin_rdma_put(1, pkt, 4, 4, 0, 0, NULL);
    spin_cmd_test(0, NULL);
    spin_dma_test(0, NULL);
    printf("commands: send_packet -> %s\n", r == SPIN_OK ? "ok" : "fail");
}

static void test_counters(void)
{
    uint32_t c0 = spin_cycles(), i0 = spin_instret();
    rt_time_wait_cycles(100);
    uint64_t c64 = spin_cycles64();
    uint32_t c1 = spin_cycles(), i1 = spin_instret();
    CHECK(c1 - c0 > 0 && i1 - i0 > 0 && c64 > 0);
    printf("counters: ok\n");
}

int main(void)
{
    test_layouts();
    test_packets();
    test_atomics();
    test_commands();
    test_counters();
    printf("selftest: %s\n", failed ? "FAILED" : "passed");
    return failed ? 1 : 0;
}
