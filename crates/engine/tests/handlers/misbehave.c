/*
 * Misbehaving handlers, one copy for two suites: crates/engine/tests/
 * containment.rs builds them with containment.c, crates/cli/tests/
 * reproductions.rs with repro_handlers.c. The NIC must contain each.
 */
#include <spin.h>
#include <spin_notify.h>
#include <assert.h>

/* Does nothing (the long-run memory case, a second tenant). */
__handler__ void empty_ph(handler_args_t *args) { (void)args; }

/* An assert that fails. */
__handler__ void assert_ph(handler_args_t *args)
{
    assert(args->task->pkt_mem_size == 12345);
}

/* Ask the host and wait for an answer that never comes. */
__handler__ void wait_forever_ph(handler_args_t *args)
{
    (void)args;
    spin_notify_t req;
    uint64_t v;
    if (spin_notify("?", 1, 0, &req) == 0)
        spin_notify_wait(req, &v);
}

/* Issue 24: every service with a 4 GiB length (softspin_ecall3(SOFTSPIN_SYS_DMA, pkt,
 * pkt, 0xFFFFFFFF) once allocated 4 GiB before checking the range): each
 * must be refused before the NIC allocates anything, and the handler goes
 * on to its end, where it writes 0x600d to the first 8-byte host slot. */
__handler__ void huge_len_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint32_t pkt = (uint32_t)t->pkt_mem, big = 0xFFFFFFFFu;
    uint64_t h = ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
    softspin_ecall3(SOFTSPIN_SYS_DMA, pkt, pkt, big);
    softspin_ecall2(SOFTSPIN_SYS_SEND_PACKET, pkt, big);
    softspin_ecall3(SOFTSPIN_SYS_RDMA_PUT, 0, pkt, big);
    softspin_ecall5(SOFTSPIN_SYS_DMA_TO_HOST, (uint32_t)h, (uint32_t)(h >> 32), pkt, big, 0);
    softspin_ecall4(SOFTSPIN_SYS_DMA_FROM_HOST, (uint32_t)h, (uint32_t)(h >> 32), pkt, big);
    softspin_ecall3(SOFTSPIN_SYS_WRITE, 1, pkt, big);
    softspin_ecall4(SOFTSPIN_SYS_NOTIFY_POST, pkt, big, 0, 0);
    softspin_ecall2(SOFTSPIN_SYS_PUSH_COUNTER, big, 1);
    spin_write_to_host(h, 0x600d, NULL);
}

/* Issue 24: 64 KiB host DMA writes without end (~1 s of host CPU per packet when
 * only instructions counted against the watchdog): the commands' bytes
 * count against it, so the loop ends after bounded host work. */
static uint8_t dma_src[64 << 10];
__handler__ void dma_loop_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint64_t h = ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
    for (;;)
        softspin_ecall5(SOFTSPIN_SYS_DMA_TO_HOST, (uint32_t)h, (uint32_t)(h >> 32), (uint32_t)dma_src, sizeof dma_src, 0);
}
