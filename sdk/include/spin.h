/* spin.h - everything a softspin handler needs: the PsPIN API plus the
 * FPsPIN additions. */
#pragma once

/* The C library parts handlers use (memcpy, memcmp, ...: the SDK's
 * freestanding libc), so a handler needs no other include. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "softspin_abi.h"
#include "softspin_ecall.h"
#include "pspin.h"
#include "util.h"
#include "spin_conf.h"
#include "packets.h"
#include "spin_dma.h"
#include "handler.h"
#include "fpspin.h"
#include "spin_node.h"
#include "spin_notify.h"
