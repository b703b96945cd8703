/*
 * allreduce: what allreduce/handler.c and its scripts (run, workers.py,
 * which read these #defines with common.defines) agree on, beside ../uc.h.
 *
 * Every packet of the use case is a one-packet message (UC_EOM set) of
 * mode UC_MODE_ALLREDUCE or UC_MODE_BARRIER: `total` is the vector's bytes,
 * `offset` its chunk's (a multiple of UC_CHUNK), `seq` the round, `src` the
 * sender's rank. The flags word carries, above UC_EOM, the packet's tag
 * (what it is in the recursive doubling, README.md) and the element type.
 */
#ifndef UC_ALLREDUCE_H
#define UC_ALLREDUCE_H

/* flags: bits 8..15 the tag, bits 16..23 the element type */
#define UC_AR_TAG_SHIFT 8
#define UC_AR_DTYPE_SHIFT 16
#define UC_AR_TAG_IN 1     /* host j^1's vector at NIC j (its step-0 partial) */
#define UC_AR_TAG_EXTRA 2  /* host P+v's vector at NIC v^1 (N not a power of two) */
#define UC_AR_TAG_RESULT 3 /* the sum, from NIC v^1 to the extra NIC P+v */
#define UC_AR_TAG_STEP 16  /* + k: the partner NIC's partial of step k */

#define UC_AR_INT32 0
#define UC_AR_FLOAT 1
#define UC_AR_DOUBLE 2

#define UC_AR_MAX 0x10000  /* largest vector, bytes */
#define UC_AR_MAX_STEPS 5  /* recursive-doubling steps: P <= 32 */
#define UC_AR_MAX_NODES 32 /* N: then P <= 32, at most UC_AR_MAX_STEPS steps */

/* Host memory of every node (its window, key UC_KEY); UC_DONE (../uc.h)
 * gets the round's seq once this node's UC_AR_OUT holds the sum. */
#define UC_AR_SRC 0x10000   /* this host's vector (its workers send it from here) */
#define UC_AR_OUT 0x20000   /* the sum, in every host */
#define UC_AR_IN 0x30000    /* staging: host v's vector (before the extra is added) */
#define UC_AR_EXTRA 0x40000 /* staging: the extra host's vector */
#define UC_AR_OWN 0x50000   /* + k * UC_AR_MAX: this NIC's partial entering step k */
#define UC_AR_STG 0xA0000   /* + k * UC_AR_MAX: the partner's partial of step k */
#define UC_AR_END 0xF0000   /* first byte past the layout (<= UC_WINDOW) */

/* Counter (spin_push_counter): a use-case packet dropped; value: why. */
#define UC_AR_CTR_DROPPED 30
#define UC_AR_DROP_FORM 1      /* element type, tag, chunk offset or length not one this vector has */
#define UC_AR_DROP_SIZE 2      /* total above UC_AR_MAX, or a barrier's not one int32 */
#define UC_AR_DROP_RANK 3      /* the source is not the rank this tag comes from here, or N unsupported */
#define UC_AR_DROP_DUPLICATE 4 /* that input of that step and chunk was in already (seq) */
#define UC_AR_DROP_DMA 5       /* a host DMA or a send failed */

#endif
