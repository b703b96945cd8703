/* Minimal freestanding stdio for softspin guests: formatted output only.
 * Each printf-family call that writes to stdout issues a single
 * SOFTSPIN_SYS_WRITE (as long as the text fits the internal buffer), so
 * lines printed concurrently by several HPUs do not interleave. */
#ifndef SOFTSPIN_LIBC_STDIO_H
#define SOFTSPIN_LIBC_STDIO_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EOF (-1)

int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int vprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
int sprintf(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int snprintf(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
int vsprintf(char *buf, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
int puts(const char *s);
int putchar(int c);

#ifdef __cplusplus
}
#endif

#endif
