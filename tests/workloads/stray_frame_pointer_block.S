/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * stray_frame_pointer_block(fd, buf, len, frame): read(fd, buf, len) called
 * with rbp pointing at frame, as code built without frame pointers leaves
 * rbp holding anything. No call frame information on purpose: the walk goes
 * on from here by frame pointer, to frame's return address, in no code.
 */
    .text
    .globl stray_frame_pointer_block
    .type stray_frame_pointer_block, @function
stray_frame_pointer_block:
    push %rbp
    mov %rcx, %rbp
    call read@PLT
    pop %rbp
    ret
    .size stray_frame_pointer_block, . - stray_frame_pointer_block

    .section .note.GNU-stack, "", @progbits
