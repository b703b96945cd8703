/* Host-side sPIN types of PsPIN's simulator API (execution contexts, NIC
 * memory, handler lookup), implemented over softspin's C API
 * (sdk/pspin/src/pspinsim.c). Same names, types and layout as PsPIN's
 * hw/verilator_model/include/spin.h, so PsPIN drivers compile unchanged. */
#ifndef __SPIN_H__
#define __SPIN_H__

#include <stdint.h>
#include <stdlib.h>

#include "spin_hw_conf.h"

#define SPIN_SUCCESS 0
#define SPIN_ERR 1

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t mem_addr_t;
typedef uint32_t mem_size_t;
typedef uint64_t host_addr_t;

/* An execution context as the host describes it to the NIC (seed 001,
 * execution contexts): handler memory in L2, a host window, the three
 * handlers (address 0 / size 0 = none) and one L1 scratchpad per cluster. */
typedef struct spin_ec {
    mem_addr_t handler_mem_addr;
    mem_size_t handler_mem_size;

    host_addr_t host_mem_addr;
    mem_size_t host_mem_size;

    mem_addr_t hh_addr;
    mem_size_t hh_size;
    mem_addr_t ph_addr;
    mem_size_t ph_size;
    mem_addr_t th_addr;
    mem_size_t th_size;

    mem_addr_t scratchpad_addr[NUM_CLUSTERS];
    mem_size_t scratchpad_size[NUM_CLUSTERS];
} __attribute__((__packed__)) spin_ec_t;

typedef uint32_t spin_nic_addr_t;

/* Host -> NIC memory copy; completes (pcie_mst_write_completion callback)
 * when the simulation runs. */
int spin_nicmem_write(spin_nic_addr_t addr, void *data, size_t size, void *user_ptr);
/* NIC memory -> host copy (immediate). */
int spin_nicmem_read(spin_nic_addr_t addr, void *data, size_t size, void *user_ptr);
/* Address of symbol `handler_name` in the handler image `binfile`. A name
 * the image lacks leaves *handler_addr and *handler_size unchanged and
 * succeeds (PsPIN: "no handler"); an unreadable image is SPIN_ERR. */
int spin_find_handler_by_name(const char *binfile, const char *handler_name,
                              spin_nic_addr_t *handler_addr, size_t *handler_size);

#ifdef __cplusplus
}
#endif

#endif /* __SPIN_H__ */
