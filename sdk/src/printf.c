/*
 * printf.c - a small printf family for softspin guests.
 *
 * Conversions: d i u x X o c s p %; flags - 0 + space #; width and
 * precision (also as *); length modifiers hh h l ll z j t.  Floating-point
 * conversions are not supported (the argument is consumed and the
 * conversion text is printed as is), since RV32IMAC has no FPU.
 *
 * printf/vprintf/puts format into a stack buffer and send it with one
 * SOFTSPIN_SYS_WRITE, so one call's text reaches the log in one piece.
 * Only text longer than SOFTSPIN_PRINTF_BUF is split across writes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "softspin_ecall.h"

#ifndef SOFTSPIN_PRINTF_BUF
#define SOFTSPIN_PRINTF_BUF 256
#endif

typedef struct sink {
    char *buf;
    size_t cap;     /* usable bytes in buf */
    size_t len;     /* bytes currently in buf */
    size_t total;   /* bytes produced so far (the return value) */
    int to_fd;      /* flush to stdout when full (else drop the excess) */
} sink_t;

static void sink_flush(sink_t *o)
{
    if (o->to_fd && o->len) {
        softspin_ecall3(SOFTSPIN_SYS_WRITE, 1, (uint32_t)o->buf, o->len);
        o->len = 0;
    }
}

static void put(sink_t *o, char c)
{
    if (o->len == o->cap)
        sink_flush(o);
    if (o->len < o->cap)
        o->buf[o->len++] = c;
    o->total++;
}

static void put_n(sink_t *o, char c, int n)
{
    for (; n > 0; n--)
        put(o, c);
}

static void put_s(sink_t *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put(o, s[i]);
}

enum {
    F_LEFT = 1,
    F_ZERO = 2,
    F_PLUS = 4,
    F_SPACE = 8,
    F_ALT = 16,
};

/* Divides *n by base (<= 16) in place and returns the remainder, using
 * 32-bit divides only (16-bit digits keep each step in range). */
static unsigned divmod_small(uint64_t *n, unsigned base)
{
    uint64_t v = *n;
    if ((v >> 32) == 0) {
        uint32_t v32 = (uint32_t)v;
        *n = v32 / base;
        return v32 % base;
    }
    uint64_t q = 0;
    uint32_t r = 0;
    for (int shift = 48; shift >= 0; shift -= 16) {
        uint32_t cur = (r << 16) | (uint32_t)((v >> shift) & 0xffffu);
        q |= (uint64_t)(cur / base) << shift;
        r = cur % base;
    }
    *n = q;
    return r;
}

/* Emits one integer conversion.  `prefix` is the sign or 0x/0X text. */
static void fmt_int(sink_t *o, uint64_t v, int negative, unsigned base,
                    int upper, int flags, int width, int prec, int is_signed,
                    int is_ptr)
{
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    char tmp[24];   /* 22 octal digits cover 64 bits */
    int nd = 0;
    char prefix[2];
    int np = 0;

    if (!(v == 0 && prec == 0)) {
        uint64_t n = v;
        do
            tmp[nd++] = digits[divmod_small(&n, base)];
        while (n);
    }

    if (is_signed) {
        if (negative)
            prefix[np++] = '-';
        else if (flags & F_PLUS)
            prefix[np++] = '+';
        else if (flags & F_SPACE)
            prefix[np++] = ' ';
    }
    if ((flags & F_ALT) && base == 16 && (v != 0 || is_ptr)) {
        prefix[np++] = '0';
        prefix[np++] = upper ? 'X' : 'x';
    }
    /* '#' with 'o' forces a leading zero by raising the precision. */
    if ((flags & F_ALT) && base == 8 && (nd == 0 || tmp[nd - 1] != '0') &&
        prec <= nd)
        prec = nd + 1;

    int zeros = prec > nd ? prec - nd : 0;
    int body = np + zeros + nd;
    int pad = width > body ? width - body : 0;

    /* The 0 flag is ignored with '-' or with an explicit precision. */
    if ((flags & F_ZERO) && !(flags & F_LEFT) && prec < 0) {
        zeros += pad;
        pad = 0;
    }
    if (!(flags & F_LEFT))
        put_n(o, ' ', pad);
    put_s(o, prefix, (size_t)np);
    put_n(o, '0', zeros);
    while (nd)
        put(o, tmp[--nd]);
    if (flags & F_LEFT)
        put_n(o, ' ', pad);
}

static void fmt_str(sink_t *o, const char *s, int flags, int width, int prec)
{
    size_t n = 0;
    if (!s)
        s = "(null)";
    while ((prec < 0 || n < (size_t)prec) && s[n])
        n++;
    int pad = width > (int)n ? width - (int)n : 0;
    if (!(flags & F_LEFT))
        put_n(o, ' ', pad);
    put_s(o, s, n);
    if (flags & F_LEFT)
        put_n(o, ' ', pad);
}

enum { L_INT, L_CHAR, L_SHORT, L_LONG, L_LLONG, L_SIZE, L_MAX, L_PTRDIFF };

static void format(sink_t *o, const char *fmt, va_list ap)
{
    while (*fmt) {
        if (*fmt != '%') {
            put(o, *fmt++);
            continue;
        }
        const char *spec = fmt++;
        int flags = 0, width = 0, prec = -1, len = L_INT;

        for (;; fmt++) {
            if (*fmt == '-')
                flags |= F_LEFT;
            else if (*fmt == '0')
                flags |= F_ZERO;
            else if (*fmt == '+')
                flags |= F_PLUS;
            else if (*fmt == ' ')
                flags |= F_SPACE;
            else if (*fmt == '#')
                flags |= F_ALT;
            else
                break;
        }
        if (*fmt == '*') {
            width = va_arg(ap, int);
            if (width < 0) {    /* a negative * width means left-justify */
                flags |= F_LEFT;
                width = -width;
            }
            fmt++;
        } else {
            while (*fmt >= '0' && *fmt <= '9')
                width = width * 10 + (*fmt++ - '0');
        }
        if (*fmt == '.') {
            fmt++;
            prec = 0;
            if (*fmt == '*') {
                prec = va_arg(ap, int);   /* negative: as if omitted */
                if (prec < 0)
                    prec = -1;
                fmt++;
            } else {
                while (*fmt >= '0' && *fmt <= '9')
                    prec = prec * 10 + (*fmt++ - '0');
            }
        }
        switch (*fmt) {
        case 'h':
            len = L_SHORT;
            if (*++fmt == 'h') {
                len = L_CHAR;
                fmt++;
            }
            break;
        case 'l':
            len = L_LONG;
            if (*++fmt == 'l') {
                len = L_LLONG;
                fmt++;
            }
            break;
        case 'z':
            len = L_SIZE;
            fmt++;
            break;
        case 'j':
            len = L_MAX;
            fmt++;
            break;
        case 't':
            len = L_PTRDIFF;
            fmt++;
            break;
        case 'L':   /* long double: only meaningful for float conversions */
            fmt++;
            break;
        default:
            break;
        }

        char conv = *fmt;
        if (conv)
            fmt++;
        switch (conv) {
        case 'd':
        case 'i': {
            int64_t v;
            switch (len) {
            case L_CHAR: v = (signed char)va_arg(ap, int); break;
            case L_SHORT: v = (short)va_arg(ap, int); break;
            case L_LONG: v = va_arg(ap, long); break;
            case L_LLONG: v = va_arg(ap, long long); break;
            case L_SIZE: v = (int64_t)(intptr_t)va_arg(ap, size_t); break;
            case L_MAX: v = va_arg(ap, intmax_t); break;
            case L_PTRDIFF: v = va_arg(ap, ptrdiff_t); break;
            default: v = va_arg(ap, int); break;
            }
            uint64_t mag = v < 0 ? -(uint64_t)v : (uint64_t)v;
            fmt_int(o, mag, v < 0, 10, 0, flags, width, prec, 1, 0);
            break;
        }
        case 'u':
        case 'x':
        case 'X':
        case 'o': {
            uint64_t v;
            switch (len) {
            case L_CHAR: v = (unsigned char)va_arg(ap, unsigned); break;
            case L_SHORT: v = (unsigned short)va_arg(ap, unsigned); break;
            case L_LONG: v = va_arg(ap, unsigned long); break;
            case L_LLONG: v = va_arg(ap, unsigned long long); break;
            case L_SIZE: v = va_arg(ap, size_t); break;
            case L_MAX: v = va_arg(ap, uintmax_t); break;
            case L_PTRDIFF: v = (uint64_t)(uintptr_t)va_arg(ap, ptrdiff_t); break;
            default: v = va_arg(ap, unsigned); break;
            }
            unsigned base = conv == 'u' ? 10 : conv == 'o' ? 8 : 16;
            fmt_int(o, v, 0, base, conv == 'X', flags, width, prec, 0, 0);
            break;
        }
        case 'p': {
            void *p = va_arg(ap, void *);
            if (!p) /* matches glibc, so test output is comparable */
                fmt_str(o, "(nil)", flags, width, -1);
            else
                fmt_int(o, (uintptr_t)p, 0, 16, 0, flags | F_ALT, width,
                        prec, 0, 1);
            break;
        }
        case 'c': {
            char c = (char)va_arg(ap, int);
            int pad = width > 1 ? width - 1 : 0;
            if (!(flags & F_LEFT))
                put_n(o, ' ', pad);
            put(o, c);
            if (flags & F_LEFT)
                put_n(o, ' ', pad);
            break;
        }
        case 's':
            fmt_str(o, va_arg(ap, const char *), flags, width, prec);
            break;
        case '%':
            put(o, '%');
            break;
        case 'f': case 'F': case 'e': case 'E':
        case 'g': case 'G': case 'a': case 'A':
            (void)va_arg(ap, double);   /* keep later arguments in step */
            put_s(o, spec, (size_t)(fmt - spec));
            break;
        default:    /* unknown (or truncated) spec: print it verbatim */
            put_s(o, spec, (size_t)(fmt - spec));
            break;
        }
    }
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
    sink_t o = { buf, size ? size - 1 : 0, 0, 0, 0 };
    format(&o, fmt, ap);
    if (size)
        buf[o.len] = 0;
    return (int)o.total;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return n;
}

int vsprintf(char *buf, const char *fmt, va_list ap)
{
    return vsnprintf(buf, (size_t)-1 >> 1, fmt, ap);
}

int sprintf(char *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsprintf(buf, fmt, ap);
    va_end(ap);
    return n;
}

int vprintf(const char *fmt, va_list ap)
{
    char buf[SOFTSPIN_PRINTF_BUF];
    sink_t o = { buf, sizeof buf, 0, 0, 1 };
    format(&o, fmt, ap);
    sink_flush(&o);
    return (int)o.total;
}

int printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vprintf(fmt, ap);
    va_end(ap);
    return n;
}

int puts(const char *s)
{
    printf("%s\n", s);
    return 1;
}

int putchar(int c)
{
    char ch = (char)c;
    softspin_ecall3(SOFTSPIN_SYS_WRITE, 1, (uint32_t)&ch, 1);
    return (unsigned char)c;
}
