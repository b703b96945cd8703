/*
 * notify: handlers ask the host application questions through the host
 * notification queue pair, several requests in flight at once.
 *
 * Each packet's payload holds 8 little-endian u32 keys. The payload handler
 * posts one request per key (the key inline), then waits for all answers
 * and writes their sum to host memory at slot `msg_id * 64 + first key % 64`
 * with a host-direct write. The host answers each key k with k * k + 1.
 */
#include <spin.h>

#define KEYS 8

__handler__ void ask_ph(handler_args_t *args)
{
    task_t *t = args->task;
    const uint32_t *keys = (const uint32_t *)((const uint8_t *)t->pkt_mem + 28);
    spin_notify_t req[KEYS];
    for (int k = 0; k < KEYS; k++)
        spin_notify(&keys[k], sizeof keys[k], 0, &req[k]); /* all in flight */
    uint64_t sum = 0;
    for (int k = KEYS - 1; k >= 0; k--) {                  /* collect in any order */
        uint64_t answer;
        spin_notify_wait(req[k], &answer);
        sum += answer;
    }
    uint64_t host = ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
    uint32_t slot = t->flow_id * 64 + keys[0] % 64;
    spin_write_to_host(host + 8 * (uint64_t)slot, sum, NULL);
}
