/*
 * handler.h - the sPIN handler API, source-compatible with the PsPIN runtime.
 *
 * NIC commands (DMA, packet send, host transfers) are ecalls into the
 * softspin HPU (see softspin_abi.h).  Unlike PsPIN, every handle / xfer /
 * completed out-pointer may be NULL (PsPIN handlers routinely pass NULL or
 * `false`); the result is then simply not stored.  Functions return SPIN_OK,
 * or SPIN_FAIL when the HPU rejected the request with a negative SPIN_ERR_*.
 */
#pragma once

#include "pspin.h"
#include "util.h"
#include "spin_conf.h"
#include "spin_dma.h"
#include "packets.h"
#include "softspin_ecall.h"

#define __handler__ __attribute__((used))

#define SPIN_DMA_EXT2LOC 0
#define SPIN_DMA_LOC2EXT 1
#define SPIN_OK 0x0
#define SPIN_FAIL 0x1

/* PsPIN semantics: `length` is used as stored (no byte swap) and the payload
 * starts after the ihl*4-byte IP header and the UDP header. */
#define GET_IP_UDP_PLD(pkt_ptr, pkt_pld_ptr, pkt_pld_len)                     \
    {                                                                         \
        ip_hdr_t *__gip_hdr = (ip_hdr_t *)(pkt_ptr);                          \
        pkt_pld_len =                                                         \
            __gip_hdr->length - sizeof(ip_hdr_t) - sizeof(udp_hdr_t);         \
        pkt_pld_ptr = ((uint8_t *)(pkt_ptr)) + (__gip_hdr->ihl * 4) +         \
                      sizeof(udp_hdr_t);                                      \
    }

typedef futex_t spin_lock_t;

/* Filled in by the engine before each handler invocation; the layout (packed,
 * 32-bit pointers) is part of the engine ABI. */
typedef struct task {
    void *handler_mem;          /* L2 handler memory */
    size_t handler_mem_size;
    void *pkt_mem;              /* packet copy in L1 */
    size_t pkt_mem_size;
    void *scratchpad[NB_CLUSTERS];      /* per-message L1 scratchpads */
    size_t scratchpad_size[NB_CLUSTERS];
    uint32_t host_mem_high;     /* host memory region */
    uint32_t host_mem_low;
    size_t host_mem_size;
    void *l2_pkt_mem;           /* packet in the L2 packet buffer */
    uint32_t home_cluster_id;
    uint32_t flow_id;
} __attribute__((__packed__)) task_t;

typedef struct handler_args {
    task_t *task;
    uint32_t hpu_gid;
    uint32_t cluster_id;
    uint32_t hpu_id;
} handler_args_t;

typedef void (*handler_fn)(handler_args_t *);

typedef dma_t spin_dma_t;

typedef struct spin_rw_lock {
    spin_lock_t glock;
    volatile int32_t num_readers;
} spin_rw_lock_t;

typedef uint32_t spin_cmd_t;

/* Maps an ecall result to SPIN_OK/SPIN_FAIL, storing the command id. */
static inline int softspin_cmd_result(int32_t r, uint32_t *out)
{
    if (r < 0)
        return SPIN_FAIL;
    if (out)
        *out = (uint32_t)r;
    return SPIN_OK;
}

/* ---- cluster DMA ---- */

/* direction/options are accepted for compatibility; the engine infers the
 * direction from the addresses. */
static inline int spin_dma(void *source, void *dest, size_t size,
                           int direction, int options, spin_dma_t *xfer)
{
    (void)direction;
    (void)options;
    if (__builtin_expect(size == 0, 0))
        return SPIN_FAIL;
    return softspin_cmd_result(
        softspin_ecall3(SOFTSPIN_SYS_DMA, (uint32_t)source, (uint32_t)dest,
                        (uint32_t)size),
        xfer);
}

static inline int spin_dma_wait(spin_dma_t xfer)
{
    return softspin_ecall1(SOFTSPIN_SYS_CMD_WAIT, xfer) < 0 ? SPIN_FAIL
                                                            : SPIN_OK;
}

static inline int spin_dma_test(spin_dma_t xfer, uint32_t *completed)
{
    int32_t r = softspin_ecall1(SOFTSPIN_SYS_CMD_TEST, xfer);
    if (r < 0)
        return SPIN_FAIL;
    if (completed)
        *completed = (r == 1);
    return SPIN_OK;
}

/* ---- locks ---- */

static inline int spin_lock_init(spin_lock_t *lock)
{
    futex_init(lock);
    return SPIN_OK;
}

/* 1 if acquired, 0 if the lock was held (PsPIN semantics). */
static inline int spin_lock_try_lock(spin_lock_t *lock)
{
    return futex_try_lock(lock);
}

static inline int spin_lock_lock(spin_lock_t *lock)
{
    futex_lock_s(lock);
    return SPIN_OK;
}

static inline int spin_lock_unlock(spin_lock_t *lock)
{
    futex_unlock(lock);
    return SPIN_OK;
}

/* Readers-writer lock: the first reader takes glock, the last releases it. */
static inline int spin_rw_lock_r_lock(spin_rw_lock_t *rwlock)
{
    if (amo_add(&rwlock->num_readers, 1) == 0)
        spin_lock_lock(&rwlock->glock);
    return SPIN_OK;
}

static inline int spin_rw_lock_r_unlock(spin_rw_lock_t *rwlock)
{
    if (amo_add(&rwlock->num_readers, -1) == 1)
        spin_lock_unlock(&rwlock->glock);
    return SPIN_OK;
}

static inline int spin_rw_lock_w_lock(spin_rw_lock_t *rwlock)
{
    return spin_lock_lock(&rwlock->glock);
}

static inline int spin_rw_lock_w_unlock(spin_rw_lock_t *rwlock)
{
    return spin_lock_unlock(&rwlock->glock);
}

/* ---- NIC commands ---- */

static inline int spin_cmd_wait(spin_cmd_t handle)
{
    return softspin_ecall1(SOFTSPIN_SYS_CMD_WAIT, handle) < 0 ? SPIN_FAIL
                                                              : SPIN_OK;
}

static inline int spin_cmd_test(spin_cmd_t handle, bool *completed)
{
    int32_t r = softspin_ecall1(SOFTSPIN_SYS_CMD_TEST, handle);
    if (r < 0)
        return SPIN_FAIL;
    if (completed)
        *completed = (r == 1);
    return SPIN_OK;
}

static inline int spin_rdma_put(uint32_t dest, void *data, uint32_t length,
                                uint32_t sput_len, uint32_t roffset,
                                uint32_t stream_cmd, spin_cmd_t *handle)
{
    return softspin_cmd_result(
        softspin_ecall6(SOFTSPIN_SYS_RDMA_PUT, dest, (uint32_t)data, length,
                        sput_len, roffset, stream_cmd),
        handle);
}

static inline int spin_send_packet(void *data, uint32_t length,
                                   spin_cmd_t *handle)
{
    return softspin_cmd_result(
        softspin_ecall2(SOFTSPIN_SYS_SEND_PACKET, (uint32_t)data, length),
        handle);
}

static inline int spin_dma_to_host(uint64_t host_addr, uint32_t nic_addr,
                                   uint32_t length, bool generate_event,
                                   spin_cmd_t *xfer)
{
    return softspin_cmd_result(
        softspin_ecall5(SOFTSPIN_SYS_DMA_TO_HOST, (uint32_t)host_addr,
                        (uint32_t)(host_addr >> 32), nic_addr, length,
                        generate_event ? 1u : 0u),
        xfer);
}

static inline int spin_dma_from_host(uint64_t host_addr, uint32_t nic_addr,
                                     uint32_t length, bool generate_event,
                                     spin_cmd_t *xfer)
{
    return softspin_cmd_result(
        softspin_ecall5(SOFTSPIN_SYS_DMA_FROM_HOST, (uint32_t)host_addr,
                        (uint32_t)(host_addr >> 32), nic_addr, length,
                        generate_event ? 1u : 0u),
        xfer);
}

/* Writes the 8-byte user_data to host memory (e.g. a completion flag). */
static inline int spin_write_to_host(uint64_t host_addr, uint64_t user_data,
                                     spin_cmd_t *xfer)
{
    return softspin_cmd_result(
        softspin_ecall4(SOFTSPIN_SYS_WRITE_TO_HOST, (uint32_t)host_addr,
                        (uint32_t)(host_addr >> 32), (uint32_t)user_data,
                        (uint32_t)(user_data >> 32)),
        xfer);
}

/* Deprecated PsPIN name. */
#define spin_host_write spin_write_to_host

/* Defined by each handler image: reports its header/payload/completion
 * handlers and (optionally) its handler memory. */
void init_handlers(handler_fn *hh, handler_fn *ph, handler_fn *th,
                   void **handler_mem_ptr);
