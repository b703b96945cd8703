/*
 * spin_dma.h - cluster DMA engine, PsPIN's spin__* names on top of the
 * SOFTSPIN_SYS_DMA / CMD_WAIT / CMD_TEST services.
 */
#pragma once

#include <stdint.h>
#include "softspin_ecall.h"

/* Starts a copy of num_bytes from src to dst; returns the transfer id
 * (a negative SPIN_ERR_* value, cast to uint32_t, if it was refused). */
static inline uint32_t spin__memcpy_nonblk(void *src_addr, void *dst_addr,
                                           uint32_t num_bytes)
{
    return (uint32_t)softspin_ecall3(SOFTSPIN_SYS_DMA, (uint32_t)src_addr,
                                     (uint32_t)dst_addr, num_bytes);
}

static inline void spin__wait_for_tf_completion(uint32_t tf_id)
{
    softspin_ecall1(SOFTSPIN_SYS_CMD_WAIT, tf_id);
}

/* Nonzero once the transfer has completed. */
static inline char spin__tf_completed(uint32_t tf_id)
{
    return softspin_ecall1(SOFTSPIN_SYS_CMD_TEST, tf_id) == 1;
}

static inline void spin__memcpy(void *src_addr, void *dst_addr,
                                uint32_t num_bytes)
{
    spin__wait_for_tf_completion(
        spin__memcpy_nonblk(src_addr, dst_addr, num_bytes));
}
