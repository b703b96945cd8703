/*
 * The bare-metal program crates/cli/tests/isa_gdb.rs debugs under
 * `softspin isa run --gdb`: main sums squares in a function of its own (a
 * breakpoint, a local, a step, a `finish` with its return value), prints
 * the sum and exits with it modulo 256.
 */
#include <stdio.h>

volatile unsigned last_sum;

__attribute__((noinline)) unsigned squares(unsigned n)
{
    unsigned sum = 0;
    for (unsigned i = 1; i <= n; i++)
        sum += i * i;
    return sum;
}

int main(void)
{
    unsigned s = squares(6);
    last_sum = s;
    printf("sum=%u\n", s);
    return s & 0xff;
}
