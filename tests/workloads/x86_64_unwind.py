#!/usr/bin/python3
"""x86_64_unwind.py IN OUT: a copy of the x86-64 ELF file IN whose .eh_frame and
.eh_frame_hdr sections are typed SHT_X86_64_UNWIND, as lld 15 and later type them
(libLLVM-15 is linked so); Debian 12's lld, 14, still writes SHT_PROGBITS. Nothing
else changes: the loader reads neither section by its type."""
import struct
import sys

SHT_X86_64_UNWIND = 0x70000001
NAMES = {b".eh_frame", b".eh_frame_hdr"}


def main(src, dst):
    data = bytearray(open(src, "rb").read())
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        sys.exit(f"{src}: not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    names_at, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    typed = 0
    for i in range(shnum):
        at = shoff + i * shentsize
        name, = struct.unpack_from("<I", data, at)
        start = names_at + name
        if bytes(data[start:data.index(0, start)]) in NAMES:
            struct.pack_into("<I", data, at + 4, SHT_X86_64_UNWIND)
            typed += 1
    if typed != len(NAMES):
        sys.exit(f"{src}: {typed} of {len(NAMES)} sections found")
    open(dst, "wb").write(data)


if __name__ == "__main__":
    main(*sys.argv[1:])
