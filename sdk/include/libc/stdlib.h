/* Minimal freestanding stdlib for softspin guests (no heap). */
#ifndef SOFTSPIN_LIBC_STDLIB_H
#define SOFTSPIN_LIBC_STDLIB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1

/* Ends the run through ecall SOFTSPIN_SYS_EXIT (93). */
__attribute__((noreturn)) void exit(int status);
__attribute__((noreturn)) void abort(void);

static inline int abs(int v) { return v < 0 ? -v : v; }
static inline long labs(long v) { return v < 0 ? -v : v; }
static inline long long llabs(long long v) { return v < 0 ? -v : v; }

#ifdef __cplusplus
}
#endif

#endif
