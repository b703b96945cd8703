/*
 * softspin_test.h - test environment for the softspin RV32 ISA suite.
 *
 * A test is a bare-metal RV32 ELF that `softspin isa run` (or qemu-riscv32
 * in user mode) runs from _start.  It ends with `ecall` and a7 = 93 (exit):
 *   a0 == 0          all checks passed
 *   a0 == N (N > 0)  the check of test number N failed
 *
 * Register conventions
 *   TESTNUM (gp / x3)  number of the test being run; reserved, never used as
 *                      an operand.  It is 1 before the first test starts,
 *                      and test numbers run from 2 to 255 (exit statuses are
 *                      8 bits wide on the host), so a failure never exits 0.
 *   Everything else (sp included) belongs to the tests: the suite never uses
 *   the stack the runner provides, tests that need sp point it at their own
 *   data.
 *
 * Code is assembled with `.option norvc` so that every instruction the
 * harness emits is a 32-bit encoding; compressed-instruction tests switch RVC
 * on only around the instruction under test (see RVC() in test_macros.h).
 */
#ifndef SOFTSPIN_TEST_H
#define SOFTSPIN_TEST_H

#define TESTNUM gp

#define SOFTSPIN_SYS_EXIT 93

/* User-level RV32 test: 32-bit encodings unless a test asks for RVC. */
#define RVTEST_RV32U \
        .option norvc;

#define RVTEST_CODE_BEGIN \
        .section .text.init, "ax", @progbits; \
        .balign 4; \
        .globl _start; \
        .type _start, @function; \
_start: \
        li TESTNUM, 1;

#define RVTEST_CODE_END \
        unimp;

#define RVTEST_PASS \
        fence; \
        li a0, 0; \
        li a7, SOFTSPIN_SYS_EXIT; \
        ecall; \
        unimp;

/* a0 = TESTNUM, forced to 1 if it were ever 0 so that a failure cannot
 * look like a pass. */
#define RVTEST_FAIL \
        fence; \
        mv a0, TESTNUM; \
        bnez a0, 1f; \
        li a0, 1; \
1:      li a7, SOFTSPIN_SYS_EXIT; \
        ecall; \
        unimp;

#define RVTEST_DATA_BEGIN \
        .data; \
        .balign 16; \
        .globl begin_testdata; \
begin_testdata:

#define RVTEST_DATA_END \
        .balign 16; \
        .globl end_testdata; \
end_testdata:

#endif /* SOFTSPIN_TEST_H */
