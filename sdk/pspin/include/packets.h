/* PsPIN's packet headers (pkt_hdr_t, ip_hdr_t, udp_hdr_t) for host drivers:
 * the handler SDK's definition, so host and handlers share one layout. */
#include "../../include/packets.h"
