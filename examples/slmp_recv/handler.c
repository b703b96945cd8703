/*
 * slmp_recv: the receiver side of SLMP (seed 000, §5.1.2) as one payload
 * handler, slmp_ph, for FPsPIN frames (Ethernet/IPv4/UDP/SLMP).
 *
 * Every segment is written by DMA at its byte offset into the message's
 * slot of the host window, so duplicates are harmless; a SYN segment is
 * answered with FPsPIN's ACK (slmp.h, slmp_make_ack). Completion does not
 * trust arrival order or uniqueness (slmp.h's receiver core: a bitmap of
 * the segments seen and a byte count per message slot; exactly one task
 * posts the host notification). No header or completion handler: every
 * packet of every message may run on any HPU in any order.
 *
 * Limits (README.md): SLMP_SLOTS messages at a time (msg_id modulo
 * SLMP_SLOTS picks the slot; another id on a busy slot is refused and
 * counted), SLMP_SEGS_MAX segments per message, so at most
 * SLMP_SEGS_MAX * seg_size bytes (95 MiB with the default 1462-byte segments),
 * and at most msg_stride bytes.
 */
#include <spin.h>
#include <slmp.h> /* the receiver core: slot table types, counters, completion, ACK */

/* Defaults: FPsPIN's full-MTU segments, 1 MiB per message. */
volatile slmp_config_t slmp_config = {SLMP_MTU1500_PAYLOAD, 1u << 20, 0};

slmp_slot_t slmp_slots[SLMP_SLOTS];
/* For the host: table geometry without a copy of the C layout. */
const uint32_t slmp_slot_count = SLMP_SLOTS;
const uint32_t slmp_slot_bytes = sizeof(slmp_slot_t);
const uint32_t slmp_segs_max = SLMP_SEGS_MAX;

__handler__ void slmp_ph(handler_args_t *args)
{
    task_t *t = args->task;
    uint32_t seg = slmp_config.seg_size, stride = slmp_config.msg_stride;
    slmp_rx_seg_t sg;
    if (!slmp_rx_parse(t, seg, &sg))
        return;
    uint64_t dst = (uint64_t)sg.slot * stride + sg.off;
    if ((uint64_t)sg.off + sg.len > stride || dst + sg.len > t->host_mem_size) {
        slmp_count(SLMP_CTR_OUT_OF_WINDOW, sg.off);
        return;
    }
    volatile slmp_slot_t *s = &slmp_slots[sg.slot];
    enum slmp_rx_claim_result c = slmp_rx_claim(s, &sg);
    if (c == SLMP_RX_STOP)
        return;
    uint64_t host = slmp_host_base(t);
    if (c == SLMP_RX_NEW && sg.len > 0) {
        spin_cmd_t dma;
        /* Wait for the DMA before setting the bit: when the count is
         * complete, every byte is in host memory. */
        if (spin_dma_to_host(host + dst, (uint32_t)sg.payload, sg.len, false, &dma) != SPIN_OK ||
            spin_cmd_wait(dma) != SPIN_OK) {
            slmp_count(SLMP_CTR_CMD_FAILED, 0);
            return;
        }
    }
    slmp_rx_mark(s, &sg);
    slmp_rx_finish(s, &sg, seg, host + (uint64_t)sg.slot * stride);
}
