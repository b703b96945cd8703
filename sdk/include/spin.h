/* spin.h - everything a softspin handler needs: the PsPIN API plus the
 * FPsPIN additions. */
#pragma once

#include "softspin_abi.h"
#include "softspin_ecall.h"
#include "pspin.h"
#include "util.h"
#include "spin_conf.h"
#include "packets.h"
#include "spin_dma.h"
#include "handler.h"
#include "fpspin.h"
#include "spin_notify.h"
