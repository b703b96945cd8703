/* PsPIN NIC shape seen by host drivers (softspin's PsPIN profile).
 * spin_ec_t carries one scratchpad per cluster, so NUM_CLUSTERS fixes its
 * layout; pspinsim_init checks it against the NIC softspin opens. */
#ifndef SOFTSPIN_PSPIN_SPIN_HW_CONF_H
#define SOFTSPIN_PSPIN_SPIN_HW_CONF_H

#ifndef NUM_CLUSTERS
#define NUM_CLUSTERS 4
#endif

#endif
