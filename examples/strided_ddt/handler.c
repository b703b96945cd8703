/*
 * strided_ddt (seed 001 §4.3 "Scatter", seed 004 §5.2 MPI datatypes): a
 * message is unpacked into host memory as a vector datatype: `count` blocks
 * of `block` bytes, block i at host offset start + i * stride. Each packet
 * carries a 4-byte header (its byte offset in the stream) and the data that
 * follows, so packets can be handled in any order: the payload handler
 * DMAs every contiguous piece of its packet to its place in host memory.
 * The layout lives in handler memory; the host writes it before activating.
 */
#include <spin.h>

typedef struct {
    uint32_t start;  /* host offset of block 0 (in the ECTX's host window) */
    uint32_t stride; /* bytes between block starts */
    uint32_t block;  /* bytes per block */
    uint32_t count;  /* blocks */
} ddt_layout_t;

ddt_layout_t ddt_layout = {0, 512, 256, 4096};

__handler__ void ddt_ph(handler_args_t *args)
{
    task_t *t = args->task;
    const uint8_t *pld = (const uint8_t *)t->pkt_mem + 28;
    if (t->pkt_mem_size < 28 + 4)
        return;
    uint32_t len = t->pkt_mem_size - 28 - 4;
    uint32_t off = *(const uint32_t *)pld;
    const uint8_t *data = pld + 4;
    uint32_t stride = ddt_layout.stride, block = ddt_layout.block;
    uint32_t bi = off / block, in = off - bi * block;
    if (bi >= ddt_layout.count)
        return;
    uint64_t host = ((uint64_t)t->host_mem_high << 32) | t->host_mem_low;
    uint64_t dst = host + ddt_layout.start + (uint64_t)bi * stride + in;
    uint32_t left = (ddt_layout.count - bi) * block - in; /* room in the type */
    if (len > left)
        len = left;
    while (len) {
        uint32_t n = block - in;
        if (n > len)
            n = len;
        spin_dma_to_host(dst, (uint32_t)data, n, false, NULL);
        data += n;
        len -= n;
        dst += stride - in;
        in = 0;
    }
}
