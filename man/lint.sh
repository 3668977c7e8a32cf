#!/bin/sh
# Each page must render with no groff warning at all (-ww), in UTF-8 as man(1)
# shows it: groff exits 0 on warnings, so its output is what fails the test.
status=0
for page in "$@"; do
    if ! out=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$page" 2>&1) || [ -n "$out" ]; then
        printf '%s:\n%s\n' "$page" "${out:-groff failed}"
        status=1
    fi
done
exit $status
