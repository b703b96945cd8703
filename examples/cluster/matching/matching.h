/*
 * Message matching with rendezvous (seed 004 §5.1, Fig. 5b): what the
 * handlers (handler.c) and the host APIs (mtapi.py, host.c; Python reads
 * these #defines with common.defines) agree on. The messages are ../uc.h's
 * with mode UC_MODE_EAGER or UC_MODE_RNDV, one packet each; the tag rides
 * in the flags word's upper 24 bits (bit 0 stays the end of message).
 *
 * Eager (data <= UC_MT_EAGER_MAX): the packet carries the data.
 * Rendezvous (larger, <= UC_MT_MAX): the packet carries 8 bytes of user
 * header, big-endian: the offset of the data in the sender's window (key
 * UC_KEY) and the send's cookie; `total` is the message size. The
 * receiver's NIC gets the data into the receive buffer, then puts the
 * cookie into the sender's UC_MT_FINS slot (cookie % UC_MT_SENDS).
 */
#ifndef MATCHING_H
#define MATCHING_H

#define UC_MT_TAG_SHIFT 8
#define UC_MT_TAG_MAX 0xffffff  /* tags 0..this: 24 bits */
#define UC_MT_ANY 0xffffffffu   /* a receive's source or tag: any */
#define UC_MT_EAGER_MAX 1408    /* UC_CHUNK: one packet */
#define UC_MT_MAX 0x80000       /* largest message */
#define UC_MT_RTS_LEN 8         /* a rendezvous packet's user header */

/* Host memory of every node (its window, key UC_KEY). Host-written: the
 * post ring and its count, the unexpected slots' acknowledgements;
 * NIC-written: completions, FINs (by the receiver's NIC), unexpected data. */
#define UC_MT_POSTED 0x0        /* u32: receives posted so far (the ring's producer count) */
#define UC_MT_KICK 0x8          /* u64: target of the peers' doorbell fetch-and-adds of 0 */
#define UC_MT_ACKS 0x100        /* u32[UC_MT_SLOTS]: generation of the unexpected slot the host copied out */
#define UC_MT_FINS 0x200        /* u64[UC_MT_SENDS]: a rendezvous send's cookie, once the receiver has its data */
#define UC_MT_POST 0x1000       /* post ring: UC_MT_POSTS entries of UC_MT_POST_LEN bytes */
#define UC_MT_COMPL 0x2000      /* completions, one per ring entry, UC_MT_COMPL_LEN bytes */
#define UC_MT_UNEXP 0x4000      /* unexpected eager data: UC_MT_SLOTS slots of UC_MT_EAGER_MAX bytes */
#define UC_MT_RECV 0x20000      /* receive buffers (the host API's allocator) */
#define UC_MT_SEND 0x110000     /* rendezvous send buffers, exposed to the receivers' gets */
#define UC_MT_END 0x200000      /* end of both areas (UC_WINDOW holds it) */

#define UC_MT_POSTS 64          /* receives posted and not completed, at most */
#define UC_MT_SLOTS 64          /* unexpected messages held at once */
#define UC_MT_SENDS 64          /* rendezvous sends in flight per node */

/* A post ring entry (little-endian u32s): post id, source (or ANY), tag
 * (or ANY), buffer offset in the window, capacity. */
#define UC_MT_POST_LEN 20
/* A completion (u32s): status, length, source, tag, unexpected slot (or
 * UC_MT_NO_SLOT: the data is in the buffer), the slot's generation, how it
 * matched; then `done` = post id + 1, written last. */
#define UC_MT_COMPL_LEN 32
#define UC_MT_DONE_OFF 28
#define UC_MT_NO_SLOT 0xffffffffu

/* Completion statuses. */
#define UC_MT_OK 0
#define UC_MT_TRUNCATED 1       /* the message is larger than the buffer: nothing written */
#define UC_MT_BAD_POST 2        /* the post's buffer is outside UC_MT_RECV..UC_MT_END */
#define UC_MT_TOO_MANY 3        /* more than UC_MT_POSTS receives outstanding */
#define UC_MT_GET_FAILED 4      /* the rendezvous get failed (RMA status in the counter) */
#define UC_MT_BUSY 5            /* too many handlers waiting for RMA: the get was not issued */

/* How a receive matched. */
#define UC_MT_HOW_POSTED 1      /* the message found the posted receive */
#define UC_MT_HOW_UNEXPECTED 2  /* the receive found the message waiting */

/* Counters (spin_push_counter): index, value. */
#define UC_MT_CTR_DROPPED 30    /* a message dropped: the reason below */
#define UC_MT_CTR_GET 31        /* a rendezvous get or FIN put failed: its RMA status */
#define UC_MT_DROP_RANK 1       /* source rank unknown, or this node's own */
#define UC_MT_DROP_SIZE 2       /* eager data not one whole packet, or rendezvous size out of range */
#define UC_MT_DROP_FLAGS 3      /* flag bits 1-7 set (reserved) */
#define UC_MT_DROP_FULL 4       /* every unexpected slot taken */
#define UC_MT_DROP_RTS 5        /* a rendezvous header that is malformed (length, exposed range) */

#endif
