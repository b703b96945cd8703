/* empty: the baseline — a payload handler that does nothing. What remains is
 * the NIC's own cost per packet (scheduling, L1 copy, invocation). */
#include <spin.h>

__handler__ void empty_ph(handler_args_t *args) { (void)args; }
