/* A handler that asks the host: it posts the first 8 payload bytes as a
 * notification, waits for the answer and DMA-writes it to host memory at
 * slot payload[0] % 64 (tests/hostif.rs, notifications over the control
 * socket). Frames: Ethernet/IPv4/UDP, payload at byte 42. */
#include <spin.h>

__handler__ void ask_ph(handler_args_t *args)
{
    task_t *t = args->task;
    const uint8_t *payload = (const uint8_t *)t->pkt_mem + 42;
    spin_notify_t req;
    uint64_t answer = 0;
    /* A refused or unanswered request writes nothing: the test sees it. */
    if (spin_notify(payload, 8, payload[0], &req) != 0 || spin_notify_wait(req, &answer) != 0)
        return;
    uint64_t host = ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
    spin_write_to_host(host + 8 * (uint64_t)(payload[0] % 64), answer, NULL);
}
