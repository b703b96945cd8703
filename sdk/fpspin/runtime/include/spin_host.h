/*
 * spin_host.h (FPsPIN profile) - FPsPIN's request/response interface
 * between a handler and the host program (seed 000 §4.2): each HPU owns
 * one page of the ECTX's host window; the handler DMAs data after the
 * page's first DMA_ALIGN bytes, writes an 8-byte flag at its start and
 * waits for the host's answer, a flag of the same shape.
 *
 * FPsPIN's handler busy-polls `__host_data.flag[hpu]` until the host writes
 * it over PCIe. softspin runs the host program between simulation steps, so
 * the wait is a host notification instead (spin_notify.h): the handler
 * posts the flag, blocks in spin_notify_wait (bounded by the NIC's wait
 * limit) and gets the host's flag as the answer, which it also stores in
 * `__host_data.flag[hpu]` as FPsPIN's host would have. libfpspin
 * (sdk/fpspin) answers these notifications.
 */
#ifndef SOFTSPIN_FPSPIN_SPIN_HOST_H
#define SOFTSPIN_FPSPIN_SPIN_HOST_H

#include <stdbool.h>
#include <stdint.h>
#include "spin_conf.h"
#include "handler.h"
#include "../../../include/spin_notify.h"

typedef struct {
    union {
        struct {
            uint8_t dma_id;  /* sequence number, echoed by the host */
            uint32_t len;    /* bytes of data in the page (request or answer) */
            uint16_t hpu_id; /* global HPU index */
        } __attribute__((packed));
        uint64_t data;
    };
} fpspin_flag_t;
_Static_assert(sizeof(fpspin_flag_t) == sizeof(uint64_t), "fpspin_flag_t is one 64-bit word");

#define HPU_ID(args) ((args)->hpu_gid)
#define HOST_ADDR(args)                                                        \
    (((uint64_t)(args)->task->host_mem_high << 32) | (args)->task->host_mem_low)
#define HOST_ADDR_HPU(args) (HOST_ADDR(args) + HPU_ID(args) * PAGE_SIZE)
#define HOST_PLD_ADDR(args) (HOST_ADDR_HPU(args) + DMA_ALIGN)

/* FPsPIN's host DMA engine moves 512-bit beats; data starts one beat into
 * the HPU's page. */
#define DMA_BUS_WIDTH 512
#define DMA_ALIGN (DMA_BUS_WIDTH / 8)

/* Last request number per HPU. FPsPIN keeps one array per cluster indexed
 * by the HPU's index in the cluster; softspin's data is one L2 copy, so it
 * is indexed by the global HPU index. */
extern volatile uint8_t dma_idx[CORE_COUNT];

/* Does the ECTX have a host window with one page per HPU? */
static inline bool fpspin_check_host_mem(handler_args_t *args)
{
    return HOST_ADDR(args) && args->task->host_mem_size >= CORE_COUNT * PAGE_SIZE;
}

/* Ask the host to process `len` bytes in this HPU's page; returns the
 * host's answer (its `len` is the length of the data it left there). A
 * refused or timed-out request returns a flag with len 0. */
static inline fpspin_flag_t fpspin_host_req(handler_args_t *args, uint32_t len)
{
    uint32_t gid = HPU_ID(args);
    fpspin_flag_t req = {
        .dma_id = (uint8_t)(dma_idx[gid] + 1),
        .len = len,
        .hpu_id = (uint16_t)gid,
    };
    dma_idx[gid] = req.dma_id;

    /* The flag goes to the page as on FPsPIN (host programs may read it
     * there), and with the notification. */
    spin_cmd_t wr;
    spin_write_to_host(HOST_ADDR_HPU(args), req.data, &wr);
    spin_cmd_wait(wr);

    fpspin_flag_t resp = {.data = 0};
    uint64_t answer;
    if (spin_notify_call(&req, sizeof(req), HOST_ADDR_HPU(args), &answer) == 0)
        resp.data = answer;
    __host_data.flag[gid] = resp.data;
    if (resp.dma_id != req.dma_id || resp.hpu_id != gid)
        printf("fpspin_host_req: answer for request %u of HPU %u, expected %u of %u\n",
               resp.dma_id, resp.hpu_id, req.dma_id, (unsigned)gid);
    return resp;
}

#endif
