/*
 * test_macros.h - macros for the softspin RV32 ISA conformance suite.
 *
 * Every test case loads TESTNUM with its number, runs the instruction under
 * test and compares the result with an expected value computed by gen.py;
 * a mismatch jumps to `fail`, which exits with TESTNUM as the status.
 *
 * Register roles inside the macros (tests never touch gp = TESTNUM):
 *   x11, x12, x13   source operands / base address
 *   x14, x15        results
 *   x7              expected value of a check
 *   x6              copy of a result (bypass tests) / link arithmetic
 *   x4, x5          loop counter and bound of the bypass loops
 * Macros whose name ends in _R take the registers as arguments, so the
 * generator can sweep the whole register file.
 *
 * Local labels: 1-3 branch/jump targets, 7 and 9 checks, 8 bypass loops.
 * Conditional branches never reach `fail` directly (it may be farther than
 * the +-4 KiB a branch can cover); they skip over a `j fail` instead.
 */
#ifndef SOFTSPIN_TEST_MACROS_H
#define SOFTSPIN_TEST_MACROS_H

/* ------------------------------------------------------------------------
 * Basic building blocks
 * ---------------------------------------------------------------------- */

#define TEST_INSERT_NOPS_0
#define TEST_INSERT_NOPS_1  nop;
#define TEST_INSERT_NOPS_2  nop; nop;
#define TEST_INSERT_NOPS_3  nop; nop; nop;
#define TEST_INSERT_NOPS_4  nop; nop; nop; nop;
#define TEST_INSERT_NOPS_5  nop; nop; nop; nop; nop;
#define TEST_INSERT_NOPS_6  nop; nop; nop; nop; nop; nop;
#define TEST_INSERT_NOPS_7  nop; nop; nop; nop; nop; nop; nop;
#define TEST_INSERT_NOPS_8  nop; nop; nop; nop; nop; nop; nop; nop;
#define TEST_INSERT_NOPS_9  nop; nop; nop; nop; nop; nop; nop; nop; nop;
#define TEST_INSERT_NOPS_10 nop; nop; nop; nop; nop; nop; nop; nop; nop; nop;

/* Assemble the enclosed instruction(s) with RVC enabled (16-bit forms). */
#define RVC(...) \
        .option push; .option rvc; __VA_ARGS__; .option pop;

/* Start a numbered test. */
#define TEST_BEGIN(testnum) \
test_ ## testnum: \
        li TESTNUM, testnum;

/* testreg must equal correctval; chkreg is clobbered. */
#define TEST_CHECK_R(testreg, chkreg, correctval) \
        li chkreg, correctval; \
        beq testreg, chkreg, 9f; \
        j fail; \
9:;

#define TEST_CHECK(testreg, correctval) \
        TEST_CHECK_R(testreg, x7, correctval)

/* Two registers must be equal. */
#define TEST_CHECK_EQ(reg1, reg2) \
        beq reg1, reg2, 9f; \
        j fail; \
9:;

/* reg >= bound (unsigned); chkreg is clobbered. */
#define TEST_CHECK_GEU_R(reg, chkreg, bound) \
        li chkreg, bound; \
        bgeu reg, chkreg, 9f; \
        j fail; \
9:;

/* Generic case: run `code`, then testreg must equal correctval. */
#define TEST_CASE(testnum, testreg, correctval, ...) \
        TEST_BEGIN(testnum) \
        __VA_ARGS__; \
        TEST_CHECK(testreg, correctval)

/* Run the body twice (x4 counts), as the bypass tests do. */
#define TEST_LOOP_BEGIN \
        li x4, 0; \
8:;

#define TEST_LOOP_END \
        addi x4, x4, 1; \
        li x5, 2; \
        bne x4, x5, 8b;

/* The aligned word at offset(base) must equal correctval (no new number). */
#define TEST_MEM_CHECK(correctval, offset, base) \
        la x11, base; \
        lw x15, offset(x11); \
        TEST_CHECK(x15, correctval)

/* End of the test list: pass, or fail with TESTNUM. */
#define TEST_PASSFAIL \
        j pass; \
fail: \
        RVTEST_FAIL \
pass: \
        RVTEST_PASS

/* ------------------------------------------------------------------------
 * Register-register operations:  inst rd, rs1, rs2
 * ---------------------------------------------------------------------- */

#define TEST_RR_OP(testnum, inst, result, val1, val2) \
        TEST_CASE(testnum, x14, result, \
                  li x11, val1; li x12, val2; inst x14, x11, x12)

#define TEST_RR_SRC1_EQ_DEST(testnum, inst, result, val1, val2) \
        TEST_CASE(testnum, x11, result, \
                  li x11, val1; li x12, val2; inst x11, x11, x12)

#define TEST_RR_SRC2_EQ_DEST(testnum, inst, result, val1, val2) \
        TEST_CASE(testnum, x12, result, \
                  li x11, val1; li x12, val2; inst x12, x11, x12)

/* Both sources and the destination are the same register. */
#define TEST_RR_SRC12_EQ_DEST(testnum, inst, result, val1) \
        TEST_CASE(testnum, x11, result, \
                  li x11, val1; inst x11, x11, x11)

/* Both sources are the same register, the destination differs. */
#define TEST_RR_SRC12_SAME(testnum, inst, result, val1) \
        TEST_CASE(testnum, x14, result, \
                  li x11, val1; inst x14, x11, x11)

#define TEST_RR_ZEROSRC1(testnum, inst, result, val2) \
        TEST_CASE(testnum, x14, result, \
                  li x12, val2; inst x14, x0, x12)

#define TEST_RR_ZEROSRC2(testnum, inst, result, val1) \
        TEST_CASE(testnum, x14, result, \
                  li x11, val1; inst x14, x11, x0)

#define TEST_RR_ZEROSRC12(testnum, inst, result) \
        TEST_CASE(testnum, x14, result, \
                  li x14, -1; inst x14, x0, x0)

/* Writes to x0 are discarded. */
#define TEST_RR_ZERODEST(testnum, inst, val1, val2) \
        TEST_CASE(testnum, x0, 0, \
                  li x11, val1; li x12, val2; inst x0, x11, x12)

/* Explicit registers (rs1 == rs2 is allowed when val1 == val2). */
#define TEST_RR_OP_R(testnum, inst, rd, rs1, rs2, chk, result, val1, val2) \
        TEST_BEGIN(testnum) \
        li rs1, val1; \
        li rs2, val2; \
        inst rd, rs1, rs2; \
        TEST_CHECK_R(rd, chk, result)

/* The result is used nop_cycles instructions after it is produced. */
#define TEST_RR_DEST_BYPASS(testnum, nop_cycles, inst, result, val1, val2) \
        TEST_BEGIN(testnum) \
        TEST_LOOP_BEGIN \
        li x11, val1; \
        li x12, val2; \
        inst x14, x11, x12; \
        TEST_INSERT_NOPS_ ## nop_cycles \
        addi x6, x14, 0; \
        TEST_CHECK(x6, result) \
        TEST_LOOP_END

/* rs1 is written first, then rs2, with nops after each. */
#define TEST_RR_SRC12_BYPASS(testnum, src1_nops, src2_nops, inst, result, val1, val2) \
        TEST_BEGIN(testnum) \
        TEST_LOOP_BEGIN \
        li x11, val1; \
        TEST_INSERT_NOPS_ ## src1_nops \
        li x12, val2; \
        TEST_INSERT_NOPS_ ## src2_nops \
        inst x14, x11, x12; \
        TEST_CHECK(x14, result) \
        TEST_LOOP_END

/* rs2 is written first, then rs1, with nops after each. */
#define TEST_RR_SRC21_BYPASS(testnum, src1_nops, src2_nops, inst, result, val1, val2) \
        TEST_BEGIN(testnum) \
        TEST_LOOP_BEGIN \
        li x12, val2; \
        TEST_INSERT_NOPS_ ## src1_nops \
        li x11, val1; \
        TEST_INSERT_NOPS_ ## src2_nops \
        inst x14, x11, x12; \
        TEST_CHECK(x14, result) \
        TEST_LOOP_END

/* ------------------------------------------------------------------------
 * Register-immediate operations:  inst rd, rs1, imm
 * ---------------------------------------------------------------------- */

#define TEST_IMM_OP(testnum, inst, result, val1, imm) \
        TEST_CASE(testnum, x14, result, \
                  li x11, val1; inst x14, x11, imm)

#define TEST_IMM_SRC1_EQ_DEST(testnum, inst, result, val1, imm) \
        TEST_CASE(testnum, x11, result, \
                  li x11, val1; inst x11, x11, imm)

#define TEST_IMM_ZEROSRC1(testnum, inst, result, imm) \
        TEST_CASE(testnum, x14, result, \
                  li x14, -1; inst x14, x0, imm)

#define TEST_IMM_ZERODEST(testnum, inst, val1, imm) \
        TEST_CASE(testnum, x0, 0, \
                  li x11, val1; inst x0, x11, imm)

#define TEST_IMM_OP_R(testnum, inst, rd, rs1, chk, result, val1, imm) \
        TEST_BEGIN(testnum) \
        li rs1, val1; \
        inst rd, rs1, imm; \
        TEST_CHECK_R(rd, chk, result)

#define TEST_IMM_DEST_BYPASS(testnum, nop_cycles, inst, result, val1, imm) \
        TEST_BEGIN(testnum) \
        TEST_LOOP_BEGIN \
        li x11, val1; \
        inst x14, x11, imm; \
        TEST_INSERT_NOPS_ ## nop_cycles \
        addi x6, x14, 0; \
        TEST_CHECK(x6, result) \
        TEST_LOOP_END

#define TEST_IMM_SRC1_BYPASS(testnum, nop_cycles, inst, result, val1, imm) \
        TEST_BEGIN(testnum) \
        TEST_LOOP_BEGIN \
        li x11, val1; \
        TEST_INSERT_NOPS_ ## nop_cycles \
        inst x14, x11, imm; \
        TEST_CHECK(x14, result) \
        TEST_LOOP_END

/* ------------------------------------------------------------------------
 * Upper immediates
 * ---------------------------------------------------------------------- */

#define TEST_LUI_R(testnum, rd, chk, result, imm) \
        TEST_BEGIN(testnum) \
        li rd, -1; \
        lui rd, imm; \
        TEST_CHECK_R(rd, chk, result)

/* auipc's result minus the absolute address of the auipc (built with
 * lui/addi, independent of auipc) must equal `result` = sext(imm << 12). */
#define TEST_AUIPC_R(testnum, rd, result, imm) \
        TEST_BEGIN(testnum) \
1:      auipc rd, imm; \
        lui x6, %hi(1b); \
        addi x6, x6, %lo(1b); \
        sub rd, rd, x6; \
        TEST_CHECK(rd, result)

/* ------------------------------------------------------------------------
 * Loads:  inst rd, offset(rs1)
 * ---------------------------------------------------------------------- */

#define TEST_LD_OP(testnum, inst, result, offset, base) \
        TEST_CASE(testnum, x14, result, \
                  la x11, base; inst x14, offset(x11))

#define TEST_LD_SRC1_EQ_DEST(testnum, inst, result, offset, base) \
        TEST_CASE(testnum, x11, result, \
                  la x11, base; inst x11, offset(x11))

#define TEST_LD_ZERODEST(testnum, inst, offset, base) \
        TEST_CASE(testnum, x0, 0, \
                  la x11, base; inst x0, offset(x11))

#define TEST_LD_OP_R(testnum, inst, rd, rs1, chk, result, offset, base) \
        TEST_BEGIN(testnum) \
        la rs1, base; \
        inst rd, offset(rs1); \
        TEST_CHECK_R(rd, chk, result)

#define TEST_LD_DEST_BYPASS(testnum, nop_cycles, inst, result, offset, base) \
        TEST_BEGIN(testnum) \
        TEST_LOOP_BEGIN \
        la x11, base; \
        inst x14, offset(x11); \
        TEST_INSERT_NOPS_ ## nop_cycles \
        addi x6, x14, 0; \
        TEST_CHECK(x6, result) \
        TEST_LOOP_END

#define TEST_LD_SRC1_BYPASS(testnum, nop_cycles, inst, result, offset, base) \
        TEST_BEGIN(testnum) \
        TEST_LOOP_BEGIN \
        la x11, base; \
        TEST_INSERT_NOPS_ ## nop_cycles \
        inst x14, offset(x11); \
        TEST_CHECK(x14, result) \
        TEST_LOOP_END

/* ------------------------------------------------------------------------
 * Stores:  inst rs2, offset(rs1); read back with load_inst.
 * Follow with TEST_MEM_CHECK lines to check the surrounding words.
 * ---------------------------------------------------------------------- */

#define TEST_ST_OP(testnum, load_inst, store_inst, loadresult, storeval, offset, base) \
        TEST_BEGIN(testnum) \
        la x11, base; \
        li x12, storeval; \
        store_inst x12, offset(x11); \
        load_inst x14, offset(x11); \
        TEST_CHECK(x14, loadresult)

#define TEST_ST_OP_R(testnum, load_inst, store_inst, rs1, rs2, chk, loadresult, storeval, offset, base) \
        TEST_BEGIN(testnum) \
        la rs1, base; \
        li rs2, storeval; \
        store_inst rs2, offset(rs1); \
        load_inst rs2, offset(rs1); \
        TEST_CHECK_R(rs2, chk, loadresult)

/* Store x0 over a location first filled with all ones. */
#define TEST_ST_ZEROSRC(testnum, load_inst, store_inst, offset, base) \
        TEST_BEGIN(testnum) \
        la x11, base; \
        li x12, -1; \
        store_inst x12, offset(x11); \
        store_inst x0, offset(x11); \
        load_inst x14, offset(x11); \
        TEST_CHECK(x14, 0)

/* Store the base register itself (its own address). */
#define TEST_ST_BASE_AS_SRC(testnum, store_inst, offset, base) \
        TEST_BEGIN(testnum) \
        la x11, base; \
        store_inst x11, offset(x11); \
        lw x14, offset(x11); \
        TEST_CHECK_EQ(x14, x11)

#define TEST_ST_SRC12_BYPASS(testnum, src1_nops, src2_nops, load_inst, store_inst, loadresult, storeval, offset, base) \
        TEST_BEGIN(testnum) \
        TEST_LOOP_BEGIN \
        li x12, storeval; \
        TEST_INSERT_NOPS_ ## src1_nops \
        la x11, base; \
        TEST_INSERT_NOPS_ ## src2_nops \
        store_inst x12, offset(x11); \
        load_inst x14, offset(x11); \
        TEST_CHECK(x14, loadresult) \
        TEST_LOOP_END

#define TEST_ST_SRC21_BYPASS(testnum, src1_nops, src2_nops, load_inst, store_inst, loadresult, storeval, offset, base) \
        TEST_BEGIN(testnum) \
        TEST_LOOP_BEGIN \
        la x11, base; \
        TEST_INSERT_NOPS_ ## src1_nops \
        li x12, storeval; \
        TEST_INSERT_NOPS_ ## src2_nops \
        store_inst x12, offset(x11); \
        load_inst x14, offset(x11); \
        TEST_CHECK(x14, loadresult) \
        TEST_LOOP_END

/* ------------------------------------------------------------------------
 * Conditional branches:  inst rs1, rs2, target
 * kind is TAKEN or NOTTAKEN (decided by gen.py); both the forward and the
 * backward direction are exercised.
 * ---------------------------------------------------------------------- */

#define TEST_BR2_TAKEN_BODY(inst, r1, r2) \
        inst r1, r2, 2f; \
        j fail; \
1:      j 3f; \
2:      inst r1, r2, 1b; \
        j fail; \
3:;

#define TEST_BR2_NOTTAKEN_BODY(inst, r1, r2) \
        inst r1, r2, 1f; \
        j 2f; \
1:      j fail; \
2:      inst r1, r2, 1b;

#define TEST_BR2_OP(testnum, inst, kind, val1, val2) \
        TEST_BEGIN(testnum) \
        li x11, val1; \
        li x12, val2; \
        TEST_BR2_ ## kind ## _BODY(inst, x11, x12)

/* Explicit registers; either may be x0 (then its value is not loaded). */
#define TEST_BR2_OP_R(testnum, inst, kind, r1, r2, setup...) \
        TEST_BEGIN(testnum) \
        setup; \
        TEST_BR2_ ## kind ## _BODY(inst, r1, r2)

#define TEST_BR2_SRC12_BYPASS(testnum, src1_nops, src2_nops, inst, kind, val1, val2) \
        TEST_BEGIN(testnum) \
        TEST_LOOP_BEGIN \
        li x11, val1; \
        TEST_INSERT_NOPS_ ## src1_nops \
        li x12, val2; \
        TEST_INSERT_NOPS_ ## src2_nops \
        TEST_BR2_ ## kind ## _BODY(inst, x11, x12) \
        TEST_LOOP_END

#define TEST_BR2_SRC21_BYPASS(testnum, src1_nops, src2_nops, inst, kind, val1, val2) \
        TEST_BEGIN(testnum) \
        TEST_LOOP_BEGIN \
        li x12, val2; \
        TEST_INSERT_NOPS_ ## src1_nops \
        li x11, val1; \
        TEST_INSERT_NOPS_ ## src2_nops \
        TEST_BR2_ ## kind ## _BODY(inst, x11, x12) \
        TEST_LOOP_END

/* Taken branch with a large forward offset: offset = 8 + pad. */
#define TEST_BR2_FAR_FWD(testnum, inst, val1, val2, pad) \
        TEST_BEGIN(testnum) \
        li x11, val1; \
        li x12, val2; \
        inst x11, x12, 2f; \
        j fail; \
        .skip pad; \
2:;

/* Taken branch with a large backward offset: offset = -(4 + pad). */
#define TEST_BR2_FAR_BWD(testnum, inst, val1, val2, pad) \
        TEST_BEGIN(testnum) \
        li x11, val1; \
        li x12, val2; \
        j 2f; \
1:      j 3f; \
        .skip pad; \
2:      inst x11, x12, 1b; \
        j fail; \
3:;

/* ------------------------------------------------------------------------
 * Jumps.  The link register minus the address of the jump must be 4
 * (2 for compressed jumps); `linkdelta` is that value, from gen.py.
 * ---------------------------------------------------------------------- */

/* jal rd, forward; rd must not be x0, x6 or x7. */
#define TEST_JAL_R(testnum, rd, linkdelta) \
        TEST_BEGIN(testnum) \
        li rd, 0; \
1:      jal rd, 2f; \
        j fail; \
2:      la x6, 1b; \
        sub x6, rd, x6; \
        TEST_CHECK(x6, linkdelta)

/* jal rd, backward. */
#define TEST_JAL_BWD_R(testnum, rd, linkdelta) \
        TEST_BEGIN(testnum) \
        li rd, 0; \
        j 2f; \
1:      j 3f; \
2:      jal rd, 1b; \
        j fail; \
3:      la x6, 2b; \
        sub x6, rd, x6; \
        TEST_CHECK(x6, linkdelta)

/* jal x0 (j): no link is written. */
#define TEST_JAL_ZERODEST(testnum) \
        TEST_BEGIN(testnum) \
        jal x0, 2f; \
        j fail; \
2:      TEST_CHECK(x0, 0)

/* jal to the very next instruction (offset 4). */
#define TEST_JAL_NEXT(testnum, linkdelta) \
        TEST_BEGIN(testnum) \
1:      jal x1, 2f; \
2:      la x6, 1b; \
        sub x6, x1, x6; \
        TEST_CHECK(x6, linkdelta)

/* Far forward jal: offset = 8 + pad. */
#define TEST_JAL_FAR_FWD(testnum, pad, linkdelta) \
        TEST_BEGIN(testnum) \
1:      jal x1, 2f; \
        j fail; \
        .skip pad; \
2:      la x6, 1b; \
        sub x6, x1, x6; \
        TEST_CHECK(x6, linkdelta)

/* Far backward jal: offset = -(4 + pad). */
#define TEST_JAL_FAR_BWD(testnum, pad, linkdelta) \
        TEST_BEGIN(testnum) \
        j 2f; \
1:      j 3f; \
        .skip pad; \
2:      jal x1, 1b; \
        j fail; \
3:      la x6, 2b; \
        sub x6, x1, x6; \
        TEST_CHECK(x6, linkdelta)

/* jalr rd, imm(rs1) with rs1 = target - imm + adj; adj = 1 checks that the
 * low bit of the target is cleared.  rd may equal rs1 (the old rs1 is the
 * base) or be x0; rd and rs1 must not be x6 or x7. */
#define TEST_JALR_R(testnum, rd, rs1, imm, adj, linkdelta) \
        TEST_BEGIN(testnum) \
        la rs1, 2f - (imm) + (adj); \
1:      jalr rd, imm(rs1); \
        j fail; \
2:      la x6, 1b; \
        sub x6, rd, x6; \
        TEST_CHECK(x6, linkdelta)

#define TEST_JALR_ZERODEST(testnum, rs1, imm) \
        TEST_BEGIN(testnum) \
        la rs1, 2f - (imm); \
        jalr x0, imm(rs1); \
        j fail; \
2:      TEST_CHECK(x0, 0)

/* Base written nop_cycles instructions before the jalr. */
#define TEST_JALR_SRC1_BYPASS(testnum, nop_cycles, linkdelta) \
        TEST_BEGIN(testnum) \
        TEST_LOOP_BEGIN \
        la x11, 2f; \
        TEST_INSERT_NOPS_ ## nop_cycles \
1:      jalr x13, 0(x11); \
        j fail; \
2:      la x6, 1b; \
        sub x6, x13, x6; \
        TEST_CHECK(x6, linkdelta) \
        TEST_LOOP_END

/* Link used nop_cycles instructions after the jalr. */
#define TEST_JALR_DEST_BYPASS(testnum, nop_cycles, linkdelta) \
        TEST_BEGIN(testnum) \
        TEST_LOOP_BEGIN \
        la x11, 2f; \
1:      jalr x13, 0(x11); \
        j fail; \
2:      TEST_INSERT_NOPS_ ## nop_cycles \
        addi x14, x13, 0; \
        la x6, 1b; \
        sub x6, x14, x6; \
        TEST_CHECK(x6, linkdelta) \
        TEST_LOOP_END

/* ------------------------------------------------------------------------
 * Fences: memory written before the fence is read back after it.
 * ---------------------------------------------------------------------- */

#define TEST_FENCE(testnum, val, base, fence_insn...) \
        TEST_BEGIN(testnum) \
        la x11, base; \
        li x12, val; \
        sw x12, 0(x11); \
        fence_insn; \
        lw x14, 0(x11); \
        TEST_CHECK(x14, val)

/* ------------------------------------------------------------------------
 * Atomics (rv32ua).  The word at `base` is set to oldval, the AMO is run
 * with `operand`; rd must return oldval and memory must then hold newval.
 * ---------------------------------------------------------------------- */

#define TEST_AMO_OP(testnum, inst, oldval, newval, operand, base) \
        TEST_BEGIN(testnum) \
        la x11, base; \
        li x12, oldval; \
        sw x12, 0(x11); \
        li x13, operand; \
        inst x14, x13, (x11); \
        TEST_CHECK(x14, oldval) \
        TEST_CHECK(x13, operand) \
        lw x15, 0(x11); \
        TEST_CHECK(x15, newval)

/* rd == x0: memory is still updated. */
#define TEST_AMO_ZERODEST(testnum, inst, oldval, newval, operand, base) \
        TEST_BEGIN(testnum) \
        la x11, base; \
        li x12, oldval; \
        sw x12, 0(x11); \
        li x13, operand; \
        inst x0, x13, (x11); \
        TEST_CHECK(x0, 0) \
        lw x15, 0(x11); \
        TEST_CHECK(x15, newval)

/* rs2 == x0: the operand is zero. */
#define TEST_AMO_ZEROSRC(testnum, inst, oldval, newval, base) \
        TEST_BEGIN(testnum) \
        la x11, base; \
        li x12, oldval; \
        sw x12, 0(x11); \
        inst x14, x0, (x11); \
        TEST_CHECK(x14, oldval) \
        lw x15, 0(x11); \
        TEST_CHECK(x15, newval)

/* rd == rs2: the operand is read before rd is written. */
#define TEST_AMO_DEST_EQ_SRC(testnum, inst, oldval, newval, operand, base) \
        TEST_BEGIN(testnum) \
        la x11, base; \
        li x12, oldval; \
        sw x12, 0(x11); \
        li x13, operand; \
        inst x13, x13, (x11); \
        TEST_CHECK(x13, oldval) \
        lw x15, 0(x11); \
        TEST_CHECK(x15, newval)

/* rd == rs1: the address is read before rd is written. */
#define TEST_AMO_DEST_EQ_ADDR(testnum, inst, oldval, newval, operand, base) \
        TEST_BEGIN(testnum) \
        la x11, base; \
        li x12, oldval; \
        sw x12, 0(x11); \
        li x13, operand; \
        inst x11, x13, (x11); \
        TEST_CHECK(x11, oldval) \
        la x11, base; \
        lw x15, 0(x11); \
        TEST_CHECK(x15, newval)

/* Explicit registers (all distinct, none of them x7). */
#define TEST_AMO_OP_R(testnum, inst, rd, rs1, rs2, oldval, newval, operand, base) \
        TEST_BEGIN(testnum) \
        la rs1, base; \
        li rd, oldval; \
        sw rd, 0(rs1); \
        li rs2, operand; \
        inst rd, rs2, (rs1); \
        TEST_CHECK(rd, oldval) \
        lw rd, 0(rs1); \
        TEST_CHECK(rd, newval)

/* nops between the initialising store, the AMO and the use of its result. */
#define TEST_AMO_BYPASS(testnum, nops1, nops2, inst, oldval, newval, operand, base) \
        TEST_BEGIN(testnum) \
        TEST_LOOP_BEGIN \
        la x11, base; \
        li x12, oldval; \
        li x13, operand; \
        sw x12, 0(x11); \
        TEST_INSERT_NOPS_ ## nops1 \
        inst x14, x13, (x11); \
        TEST_INSERT_NOPS_ ## nops2 \
        addi x6, x14, 0; \
        TEST_CHECK(x6, oldval) \
        lw x15, 0(x11); \
        TEST_CHECK(x15, newval) \
        TEST_LOOP_END

/* ------------------------------------------------------------------------
 * LR/SC.  sc writes 0 to rd on success, non-zero on failure; a failed SC
 * must leave memory unchanged.
 * ---------------------------------------------------------------------- */

#define TEST_CHECK_SC_OK(reg)   TEST_CHECK(reg, 0)
#define TEST_CHECK_SC_FAIL(reg) \
        bnez reg, 9f; \
        j fail; \
9:;

/* lr.w must return `result`. */
#define TEST_LR_OP(testnum, lr_inst, result, base) \
        TEST_CASE(testnum, x14, result, \
                  la x11, base; lr_inst x14, (x11))

/* lr.w then sc.w: memory becomes storeval. */
#define TEST_LRSC_OK(testnum, lr_inst, sc_inst, oldval, storeval, base) \
        TEST_BEGIN(testnum) \
        la x11, base; \
        li x12, storeval; \
        lr_inst x14, (x11); \
        TEST_CHECK(x14, oldval) \
        sc_inst x15, x12, (x11); \
        TEST_CHECK_SC_OK(x15) \
        lw x15, 0(x11); \
        TEST_CHECK(x15, storeval)

/* sc.w with no valid reservation: fails, memory keeps oldval. */
#define TEST_SC_NORES(testnum, sc_inst, oldval, storeval, base) \
        TEST_BEGIN(testnum) \
        la x11, base; \
        li x12, storeval; \
        sc_inst x15, x12, (x11); \
        TEST_CHECK_SC_FAIL(x15) \
        lw x15, 0(x11); \
        TEST_CHECK(x15, oldval)

/* ------------------------------------------------------------------------
 * Counters (Zicsr / Zicntr).
 *
 * The value an instruction reads from instret counts the instructions
 * retired before it, not itself.  So with k instructions strictly between
 * two reads, the second read is larger by exactly k + 1 (the first read
 * retires too).  qemu-user reports the host time-stamp counter for cycle,
 * instret and time, so check_qemu.sh builds with -DISA_QEMU_USER, which
 * relaxes "== k + 1" to ">= k + 1".
 * ---------------------------------------------------------------------- */

#ifdef ISA_QEMU_USER
#define TEST_CHECK_INSTRET_DELTA(reg, delta) TEST_CHECK_GEU_R(reg, x7, delta)
#else
#define TEST_CHECK_INSTRET_DELTA(reg, delta) TEST_CHECK(reg, delta)
#endif

/* Read a 64-bit counter into hi:lo, retrying if the high half changed. */
#define READ_CSR64(csr, csrh, hi, lo, tmp) \
1:      csrr hi, csrh; \
        csrr lo, csr; \
        csrr tmp, csrh; \
        bne hi, tmp, 1b;

/* (hi2:lo2) >= (hi1:lo1) as unsigned 64-bit numbers. */
#define TEST_CHECK_GE64(hi2, lo2, hi1, lo1) \
        bltu hi1, hi2, 9f; \
        bne hi1, hi2, 7f; \
        bgeu lo2, lo1, 9f; \
7:      j fail; \
9:;

/* ------------------------------------------------------------------------
 * Compressed instructions (rv32uc).  Only the instruction under test is
 * assembled with RVC on; the harness around it uses 32-bit encodings.
 * ---------------------------------------------------------------------- */

/* c.<op> rd, imm   (c.addi, c.li, c.lui, c.andi, c.slli, c.srli, c.srai) */
#define TEST_C_OP_RI(testnum, inst, rd, chk, result, val1, imm) \
        TEST_BEGIN(testnum) \
        li rd, val1; \
        RVC(inst rd, imm) \
        TEST_CHECK_R(rd, chk, result)

/* c.<op> rd, rs2   (c.mv, c.add, c.sub, c.xor, c.or, c.and); rs2 must keep
 * its value.  chk must differ from rd and rs2. */
#define TEST_C_OP_RR(testnum, inst, rd, rs2, chk, result, val1, val2) \
        TEST_BEGIN(testnum) \
        li rd, val1; \
        li rs2, val2; \
        RVC(inst rd, rs2) \
        TEST_CHECK_R(rd, chk, result) \
        TEST_CHECK_R(rs2, chk, val2)

/* c.<op> rd, rd (same register) */
#define TEST_C_OP_RR_SAME(testnum, inst, rd, chk, result, val1) \
        TEST_BEGIN(testnum) \
        li rd, val1; \
        RVC(inst rd, rd) \
        TEST_CHECK_R(rd, chk, result)

#define TEST_C_ADDI4SPN(testnum, rd, chk, result, spval, imm) \
        TEST_BEGIN(testnum) \
        li sp, spval; \
        RVC(c.addi4spn rd, sp, imm) \
        TEST_CHECK_R(rd, chk, result) \
        TEST_CHECK_R(sp, chk, spval)

#define TEST_C_ADDI16SP(testnum, chk, result, spval, imm) \
        TEST_BEGIN(testnum) \
        li sp, spval; \
        RVC(c.addi16sp sp, imm) \
        TEST_CHECK_R(sp, chk, result)

#define TEST_C_LW(testnum, rd, rs1, chk, result, offset, base) \
        TEST_BEGIN(testnum) \
        la rs1, base; \
        RVC(c.lw rd, offset(rs1)) \
        TEST_CHECK_R(rd, chk, result)

#define TEST_C_LWSP(testnum, rd, chk, result, offset, base) \
        TEST_BEGIN(testnum) \
        la sp, base; \
        RVC(c.lwsp rd, offset(sp)) \
        TEST_CHECK_R(rd, chk, result)

/* Stored word read back with lw; follow with TEST_MEM_CHECK lines. */
#define TEST_C_SW(testnum, rs1, rs2, chk, storeval, offset, base) \
        TEST_BEGIN(testnum) \
        la rs1, base; \
        li rs2, storeval; \
        RVC(c.sw rs2, offset(rs1)) \
        lw chk, offset(rs1); \
        TEST_CHECK_EQ(chk, rs2)

#define TEST_C_SWSP(testnum, rs2, chk, storeval, offset, base) \
        TEST_BEGIN(testnum) \
        la sp, base; \
        li rs2, storeval; \
        RVC(c.swsp rs2, offset(sp)) \
        lw chk, offset(sp); \
        TEST_CHECK_EQ(chk, rs2)

/* c.beqz / c.bnez */
#define TEST_C_BR1_TAKEN_BODY(inst, r) \
        RVC(inst r, 2f) \
        j fail; \
1:      j 3f; \
2:      RVC(inst r, 1b) \
        j fail; \
3:;

#define TEST_C_BR1_NOTTAKEN_BODY(inst, r) \
        RVC(inst r, 1f) \
        j 2f; \
1:      j fail; \
2:      RVC(inst r, 1b)

#define TEST_C_BR1(testnum, inst, kind, r, val) \
        TEST_BEGIN(testnum) \
        li r, val; \
        TEST_C_BR1_ ## kind ## _BODY(inst, r)

/* Far taken c.beqz/c.bnez/c.j/c.jal (reg = val is set first): forward
 * offset = 6 + pad, backward offset = -(4 + pad). */
#define TEST_C_FAR_FWD(testnum, pad, reg, val, jump_insn...) \
        TEST_BEGIN(testnum) \
        li reg, val; \
        RVC(jump_insn) \
        j fail; \
        .skip pad; \
2:;

#define TEST_C_FAR_BWD(testnum, pad, reg, val, jump_insn...) \
        TEST_BEGIN(testnum) \
        li reg, val; \
        j 2f; \
1:      j 3f; \
        .skip pad; \
2:      RVC(jump_insn) \
        j fail; \
3:;

/* c.j forward and backward */
#define TEST_C_J(testnum) \
        TEST_BEGIN(testnum) \
        RVC(c.j 2f) \
        j fail; \
1:      j 3f; \
2:      RVC(c.j 1b) \
        j fail; \
3:;

/* c.jal: x1 = address of the c.jal + linkdelta (2). */
#define TEST_C_JAL(testnum, linkdelta) \
        TEST_BEGIN(testnum) \
        li x1, 0; \
1:      RVC(c.jal 2f) \
        j fail; \
2:      la x6, 1b; \
        sub x6, x1, x6; \
        TEST_CHECK(x6, linkdelta)

#define TEST_C_JAL_BWD(testnum, linkdelta) \
        TEST_BEGIN(testnum) \
        li x1, 0; \
        j 2f; \
1:      j 3f; \
2:      RVC(c.jal 1b) \
        j fail; \
3:      la x6, 2b; \
        sub x6, x1, x6; \
        TEST_CHECK(x6, linkdelta)

/* c.jr rs1 (target = rs1 + adj with the low bit cleared). */
#define TEST_C_JR(testnum, rs1, adj) \
        TEST_BEGIN(testnum) \
        la rs1, 2f + (adj); \
        RVC(c.jr rs1) \
        j fail; \
2:;

/* c.jalr rs1: x1 = address of the c.jalr + linkdelta (2); rs1 may be x1. */
#define TEST_C_JALR(testnum, rs1, adj, linkdelta) \
        TEST_BEGIN(testnum) \
        la rs1, 2f + (adj); \
1:      RVC(c.jalr rs1) \
        j fail; \
2:      la x6, 1b; \
        sub x6, x1, x6; \
        TEST_CHECK(x6, linkdelta)

#endif /* SOFTSPIN_TEST_MACROS_H */
