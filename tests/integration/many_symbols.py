"""Programs with millions of function symbols, made in seconds: a small program's
.symtab and .strtab replaced by bigger ones appended to the file (the assembler and
the linker take minutes over as many), each copy with a build-id of its own."""
import os
import shutil
import struct
from pathlib import Path

EHDR_SHOFF = 0x28
EHDR_SHENTSIZE = 0x3A
SHDR = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
SYM = struct.Struct("<IBBHQQ")  # Elf64_Sym
SHT_SYMTAB, SHT_NOTE = 2, 7
STT_FUNC_LOCAL = 2  # st_info: STB_LOCAL << 4 | STT_FUNC
# the added functions: 16 bytes each, from an address far above the program's own
# code, so that none covers a frame of it
BASE, SIZE = 0x10000000, 16
# fields of SHDR
NAME, TYPE, OFFSET, SIZE_FIELD, LINK, INFO = 0, 1, 4, 5, 6, 7


def _section_headers(data: bytes):
    shoff, = struct.unpack_from("<Q", data, EHDR_SHOFF)
    shentsize, shnum, _ = struct.unpack_from("<HHH", data, EHDR_SHENTSIZE)
    return shoff, shentsize, [list(SHDR.unpack_from(data, shoff + i * shentsize))
                              for i in range(shnum)]


def _section_name(data: bytes, shdrs, sh) -> bytes:
    _, _, shstrndx = struct.unpack_from("<HHH", data, EHDR_SHENTSIZE)
    start = shdrs[shstrndx][OFFSET] + sh[NAME]
    return data[start:data.index(b"\0", start)]


def add_symbols(src: Path, dst: Path, count: int) -> None:
    """dst: src with count more local functions f0, f1, ... in its .symtab."""
    data = bytearray(src.read_bytes())
    shoff, shentsize, shdrs = _section_headers(data)
    symtab_index = next(i for i, sh in enumerate(shdrs) if sh[TYPE] == SHT_SYMTAB)
    symtab = shdrs[symtab_index]
    strtab = shdrs[symtab[LINK]]
    text_index = next(i for i, sh in enumerate(shdrs) if _section_name(data, shdrs, sh) == b".text")
    old_syms = bytes(data[symtab[OFFSET]:symtab[OFFSET] + symtab[SIZE_FIELD]])
    old_names = bytes(data[strtab[OFFSET]:strtab[OFFSET] + strtab[SIZE_FIELD]])
    names = [b"f%d\0" % i for i in range(count)]
    added = bytearray(count * SYM.size)
    at = len(old_names)
    for i, name in enumerate(names):
        SYM.pack_into(added, i * SYM.size, at, STT_FUNC_LOCAL, 0, text_index, BASE + i * SIZE,
                      SIZE)
        at += len(name)
    # locals come first in a .symtab; sh_info is the index of the first global
    split = symtab[INFO] * SYM.size
    new_syms = old_syms[:split] + added + old_syms[split:]
    data += b"\0" * (-len(data) % 8)
    strtab[OFFSET], strtab[SIZE_FIELD] = len(data), at
    data += old_names + b"".join(names)
    data += b"\0" * (-len(data) % 8)
    symtab[OFFSET], symtab[SIZE_FIELD] = len(data), len(new_syms)
    symtab[INFO] += count
    data += new_syms
    for i in (symtab_index, symtab[LINK]):
        SHDR.pack_into(data, shoff + i * shentsize, *shdrs[i])
    dst.write_bytes(data)
    dst.chmod(0o755)


def set_build_id(path: Path, seed: int) -> None:
    """Give the file at path a build-id of its own (same length as its own)."""
    with open(path, "r+b") as f:
        data = f.read()
        _, _, shdrs = _section_headers(data)
        note = next(sh for sh in shdrs if sh[TYPE] == SHT_NOTE and
                    _section_name(data, shdrs, sh) == b".note.gnu.build-id")
        namesz, descsz, _ = struct.unpack_from("<III", data, note[OFFSET])
        desc = note[OFFSET] + 12 + (namesz + 3) // 4 * 4
        f.seek(desc)
        f.write(bytes((seed * 37 + i) & 0xFF for i in range(descsz)))


def copies(program: Path, count: int, n: int, cache: Path, into: Path):
    """n copies of program with count more symbols each, in into: made once (kept in
    cache, remade when program is newer), each with its own build-id."""
    base = cache / f"{program.name}-{count}-symbols"
    if not base.exists() or base.stat().st_mtime < program.stat().st_mtime:
        cache.mkdir(parents=True, exist_ok=True)
        made = base.with_suffix(f".{os.getpid()}")
        add_symbols(program, made, count)
        made.rename(base)
    paths = []
    for i in range(n):
        path = into / f"{program.name}-{i}"
        shutil.copyfile(base, path)
        path.chmod(0o755)
        set_build_id(path, i + 1)
        paths.append(path)
    return paths
