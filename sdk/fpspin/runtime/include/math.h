/*
 * math.h (FPsPIN profile) - the part of libm FPsPIN's handlers and their
 * libraries use (FPsPIN links handlers with -lm; umm_malloc's heap metric
 * needs sqrtf). Implemented in src/fpspin_rt.c.
 */
#ifndef SOFTSPIN_FPSPIN_MATH_H
#define SOFTSPIN_FPSPIN_MATH_H

double sqrt(double x);
float sqrtf(float x);

#endif
