/*
 * crt0_bare.S - entry point of bare-metal softspin programs.
 *
 * The runner sets sp (and loads .data); we set gp, clear .bss (the loader
 * need not zero it), run main(0, 0) and exit with its return value through
 * ecall 93, the same exit call qemu-riscv32 implements.
 */
    .section .text.init, "ax", @progbits
    .globl _start
    .type _start, @function
_start:
    /* gp must not be set via a gp-relative (relaxed) sequence. */
    .option push
    .option norelax
    la      gp, __global_pointer$
    .option pop

    la      t0, __bss_start
    la      t1, __bss_end
    j       2f
1:  sw      zero, 0(t0)
    addi    t0, t0, 4
2:  bltu    t0, t1, 1b

    li      a0, 0
    li      a1, 0
    call    main

    li      a7, 93
    ecall
3:  j       3b      /* exit does not return; stay put if it ever does */
    .size _start, . - _start
