/* printf formatting: conversions, flags, widths, precisions and length
 * modifiers, compared against the host C library.  Each line is wrapped in
 * [] so padding is visible; return values of printf/snprintf are checked. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Some lines pass int where %hh/%h expect char/short on purpose (printf must
 * truncate); silence the format-type warning for them. */
#pragma GCC diagnostic ignored "-Wformat"

int main(void)
{
    static const int ints[] = {0, 1, -1, 42, -42, 123456, -987654,
                               2147483647, (-2147483647 - 1)};
    static const char *const ifmts[] = {
        "[%d]", "[%i]", "[%5d]", "[%-5d]", "[%05d]", "[%+d]", "[% d]",
        "[%+05d]", "[%-+6d]", "[% 06d]", "[%.3d]", "[%8.3d]", "[%-8.3d]",
        "[%08.3d]", "[%.0d]", "[%+.0d]", "[%12d]", "[%012d]", "[%-12d|]",
    };
    for (unsigned f = 0; f < sizeof ifmts / sizeof ifmts[0]; f++) {
        for (unsigned i = 0; i < sizeof ints / sizeof ints[0]; i++)
            printf(ifmts[f], ints[i]);
        printf("\n");
    }

    static const unsigned uns[] = {0, 1, 7, 8, 255, 256, 0xdeadbeef,
                                   4294967295u};
    static const char *const ufmts[] = {
        "[%u]", "[%x]", "[%X]", "[%o]", "[%#x]", "[%#X]", "[%#o]", "[%8x]",
        "[%-8x]", "[%08x]", "[%#010x]", "[%#.4x]", "[%.0x]", "[%#.0o]",
        "[%+u]", "[% u]", "[%#5o]", "[%.10u]",
    };
    for (unsigned f = 0; f < sizeof ufmts / sizeof ufmts[0]; f++) {
        for (unsigned i = 0; i < sizeof uns / sizeof uns[0]; i++)
            printf(ufmts[f], uns[i]);
        printf("\n");
    }

    /* Strings and characters. */
    const char *s = "softspin";
    printf("[%s] [%10s] [%-10s] [%.4s] [%10.3s] [%-10.3s] [%.0s] [%.20s]\n",
           s, s, s, s, s, s, s, s);
    printf("[%s] [%3s] [%-3s|]\n", "", "", "");
    printf("[%c] [%3c] [%-3c] [%c%c%c]\n", 'a', 'b', 'c', 'x', 'y', 'z');
    printf("[%%] [%5s%%] [100%%]\n", "ab");

    /* '*' width and precision, including negative values. */
    for (int w = -6; w <= 6; w += 3)
        printf("[%*d] [%*s] [%.*d] [%.*s] [%*.*d]\n", w, 42, w, "ab", w, 7, w,
               "abcdef", w, w, -5);

    /* Length modifiers. */
    printf("[%hhd %hhu %hhx] [%hd %hu %hx]\n", 200, 200, 0x1ff, 70000, 70000,
           0x12345);
    printf("[%hhd %hd]\n", -129, -32769);
    printf("[%lld %llu %llx %llX %llo]\n", -1234567890123ll,
           18446744073709551615ull, 0x0123456789abcdefull,
           0xfedcba9876543210ull, 01234567012345670ull);
    printf("[%20lld] [%-20lld|] [%020llu] [%+lld] [%.25llu]\n",
           -9223372036854775807ll - 1, 42ll, 123ull, 5ll, 77ull);
    printf("[%#llx] [%#llo] [%lli]\n", 0xffffffffffull, 8ull, -8ll);
    printf("[%zu %zx] [%td] [%jd %ju]\n", (size_t)12345, (size_t)0xabc,
           (ptrdiff_t)-77, (intmax_t)-123456789012ll,
           (uintmax_t)123456789012ull);
    printf("[%ld %lu %lx]\n", -2147483647L, 4294967295UL, 0xcafeUL);
    printf("[%p] [%10p] [%-10p|]\n", (void *)0, (void *)0, (void *)0);

    /* Return values and snprintf truncation. */
    int n = printf("count me: %d %s\n", 12345, "xyz");
    printf("printf returned %d\n", n);
    char buf[16];
    for (int size = 0; size <= 16; size += 4) {
        for (int k = 0; k < 16; k++)
            buf[k] = '#';
        int r = snprintf(buf, (size_t)size, "%s-%08x-%d", "abc", 0xbeefu, -7);
        buf[15] = 0;
        printf("snprintf(%2d) = %d \"%s\"\n", size, r, size ? buf : "-");
    }
    int r = snprintf(NULL, 0, "%lld", -1234567890123456789ll);
    printf("snprintf(NULL,0) = %d\n", r);
    char big[64];
    r = sprintf(big, "%5d|%-5d|%05d|%x", 1, 2, 3, 255u);
    printf("sprintf = %d \"%s\"\n", r, big);

    /* A table: the typical use. */
    for (int i = 0; i < 6; i++)
        printf("%-6s|%4d|%6.2d|%#6x|%+4d\n", i & 1 ? "odd" : "even", i * i * i,
               i, (unsigned)(i * 1000), i - 3);
    return 0;
}
