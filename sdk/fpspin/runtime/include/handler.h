/*
 * handler.h (FPsPIN profile) - the SDK's handler API with FPsPIN's packet
 * headers: this packets.h is included first so that its guard keeps the
 * PsPIN "IP-like" packets.h (which the SDK's handler.h includes from its
 * own directory) out.
 */
#ifndef SOFTSPIN_FPSPIN_HANDLER_H
#define SOFTSPIN_FPSPIN_HANDLER_H
#include <packets.h>
#include "pspin.h"
#include "../../../include/handler.h"
#endif
