#!/bin/sh
# Run in the guest instead of checks.sh (same arguments) to name where a hung guest was
# (tests/integration/test_kernels.py): the kernel's symbols, to OUT.
cat /proc/kallsyms >"$5"
