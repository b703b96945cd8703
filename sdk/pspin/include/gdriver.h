/* PsPIN's generic simulation driver (examples/generic_driver/gdriver.h:
 * same functions, callback types and constants) over softspin: up to
 * GDRIVER_EC_MAX ECTXs, traffic from a built-in generator (-m -p -s -d -l)
 * or a PsPIN packet trace (-t). See docs/pspin-drivers.md. */
#pragma once

#define GDRIVER_OK 0
#define GDRIVER_ERR 1

#define GDRIVER_MATCHING_CTX_MAXSIZE 256

#include <stdint.h>
#include <stdlib.h>

/* (message index, packet index, packet buffer, packet size, L1 bytes out)
 * -> packet size to send. */
typedef uint32_t (*fill_packet_fun_t)(uint32_t, uint32_t, uint8_t *, uint32_t, uint32_t *);
/* (trace source address, ECTX matching context) -> nonzero if it matches. */
typedef int (*match_packet_fun_t)(char *, char *);

int gdriver_add_ectx(const char *hfile, const char *hh, const char *ph, const char *th,
                     fill_packet_fun_t fill_cb, void *l2_img, size_t l2_img_size,
                     void *matching_ctx, size_t matching_ctx_size);
int gdriver_run();
int gdriver_fini();
int gdriver_init(int argc, char **argv, match_packet_fun_t matching_cb, int *ectx_num);
