/*
 * spin_notify.h - host notifications: a queue pair between handlers and the
 * host application (softspin's answer to FPsPIN's one-slot, busy-waiting
 * fpspin_host_req, seed 000 §4.2/§7.5).
 *
 * A handler posts a request carrying up to SPIN_NOTIFY_INLINE_MAX bytes
 * inline and/or a reference (e.g. a host address it wrote data to); several
 * requests may be in flight per ECTX (the ring size is a NIC setting). The
 * host polls or blocks on its side and answers each request with a 64-bit
 * value, which the handler collects with spin_notify_wait/test.
 */
#ifndef SPIN_NOTIFY_H
#define SPIN_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>
#include "softspin_abi.h"
#include "softspin_ecall.h"

#define SPIN_NOTIFY_INLINE_MAX 64

typedef uint32_t spin_notify_t;

/* Post a request. A full ring is retried (the host frees slots by
 * answering); the handler's watchdog bounds the wait. */
static inline int spin_notify(const void *data, uint32_t len, uint64_t host_ref, spin_notify_t *req)
{
    int32_t r;
    for (;;) {
        r = softspin_ecall4(SOFTSPIN_SYS_NOTIFY_POST, (uint32_t)data, len, (uint32_t)host_ref,
                            (uint32_t)(host_ref >> 32));
        if (r != SPIN_ERR_BUSY)
            break;
        for (volatile int i = 0; i < 16; i++) {
        }
    }
    if (r < 0)
        return 1; /* SPIN_FAIL */
    if (req)
        *req = (spin_notify_t)r;
    return 0; /* SPIN_OK */
}

/* Block until the host answered `req`; store the answer if asked.
 * Returns 0, or SPIN_ERR_NOENT if `req` is not a request this task posted
 * and has not collected yet (ids belong to the posting task; another
 * handler's id is refused, and the refusal is reported as an error). The
 * NIC bounds the wait (wait_limit_ns): past it the handler is ended with
 * "wait timeout". */
static inline int spin_notify_wait(spin_notify_t req, uint64_t *response)
{
    register uint32_t a7 __asm__("a7") = SOFTSPIN_SYS_NOTIFY_WAIT;
    register int32_t a0 __asm__("a0") = (int32_t)req;
    register uint32_t a1 __asm__("a1") = 0;
    register uint32_t a2 __asm__("a2") = 0;
    __asm__ __volatile__("ecall" : "+r"(a0), "+r"(a1), "+r"(a2) : "r"(a7) : SOFTSPIN_ECALL_CLOBBERS);
    if (a0 < 0)
        return a0;
    if (response)
        *response = ((uint64_t)a2 << 32) | a1;
    return 0;
}

/* Has the host answered `req`? Returns 0 (with *done set), or
 * SPIN_ERR_NOENT as spin_notify_wait. */
static inline int spin_notify_test(spin_notify_t req, bool *done, uint64_t *response)
{
    register uint32_t a7 __asm__("a7") = SOFTSPIN_SYS_NOTIFY_TEST;
    register int32_t a0 __asm__("a0") = (int32_t)req;
    register uint32_t a1 __asm__("a1") = 0;
    register uint32_t a2 __asm__("a2") = 0;
    __asm__ __volatile__("ecall" : "+r"(a0), "+r"(a1), "+r"(a2) : "r"(a7) : SOFTSPIN_ECALL_CLOBBERS);
    if (a0 < 0)
        return a0;
    if (done)
        *done = a0 == 1;
    if (response && a0 == 1)
        *response = ((uint64_t)a2 << 32) | a1;
    return 0;
}

/* Post and wait: a synchronous call to the host. */
static inline int spin_notify_call(const void *data, uint32_t len, uint64_t host_ref, uint64_t *response)
{
    spin_notify_t req;
    if (spin_notify(data, len, host_ref, &req))
        return 1;
    return spin_notify_wait(req, response);
}

#endif
