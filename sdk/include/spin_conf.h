/*
 * spin_conf.h - machine configuration constants (PsPIN defaults).
 * Every value is #ifndef-guarded so the build can pass the configured
 * machine with -D (e.g. -DNB_CLUSTERS=2).
 */
#pragma once

#ifndef NB_CORES
#define NB_CORES 8              /* HPUs per cluster */
#endif

#ifndef NB_CLUSTERS
#define NB_CLUSTERS 4
#endif

#ifndef CORE_COUNT
#define CORE_COUNT (NB_CORES * NB_CLUSTERS)
#endif

/* Input packet queue length in bytes: 4 MiB minus three words of metadata. */
#ifndef PacketQueueLength
#define PacketQueueLength (4 * (1 << 20) - 3 * 4)
#endif

/* Maximum packet payload in bytes. */
#ifndef PKT_SIZE
#define PKT_SIZE 1024
#endif

#ifndef NUM_CLUSTER_HPUS
#define NUM_CLUSTER_HPUS (NB_CORES)
#endif

/* The cluster count this image was built for (task_t's layout depends on
 * it): the engine reads this symbol and refuses an image built for another
 * NIC. Weak, so every translation unit may define it. */
__attribute__((used, weak)) const unsigned int __softspin_nb_clusters = NB_CLUSTERS;
