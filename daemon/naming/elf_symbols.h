/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The function symbols of one ELF file (.symtab and .dynsym, with their
 * sizes) and its PT_LOAD segments, copied out of the file so that no
 * descriptor or mapping is kept open while it is cached.
 */
#ifndef ELF_SYMBOLS_H
#define ELF_SYMBOLS_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_symbols;

/* Where the memory for a file's symbols comes from: at most cap bytes for one
 * file, and make_room(userdata, bytes) (if set) to be called before that much
 * is read (it may free other files' symbols; < 0: none is read). */
struct elf_symbols_budget {
    size_t cap;
    int (*make_room)(void *userdata, size_t bytes);
    void *userdata;
};

/* Read the ELF file open on fd (the descriptor is not kept). Its symbols
 * take what budget allows (entries and names, its debug file's included): a
 * file whose symbol tables could hold more than the cap has its segments and
 * build-id read, but no symbols (elf_symbols_refused), and none of its
 * tables is read. The budget must outlive e.
 * Returns 0, -ENOEXEC if it is not an ELF executable or shared object, or
 * another negative errno. */
int elf_symbols_read(int fd, const struct elf_symbols_budget *budget, struct elf_symbols **ret);
struct elf_symbols *elf_symbols_free(struct elf_symbols *e);

/* Bytes its symbols hold. */
size_t elf_symbols_memory(const struct elf_symbols *e);

/* A symbol table (its own or its debug file's) over the cap was not read. */
bool elf_symbols_refused(const struct elf_symbols *e);

/* Free the symbols, keep the rest (segments, build-id): its frames are
 * named by offset from now on. */
void elf_symbols_drop(struct elf_symbols *e);

/* The address a file offset is loaded at, through the PT_LOAD segment whose
 * file contents hold it. Returns 0 or -ENOENT. */
int elf_symbols_offset_to_vaddr(const struct elf_symbols *e, uint64_t offset, uint64_t *ret);

/* The function whose [value, value + size) holds vaddr, or NULL. */
const char *elf_symbols_lookup(const struct elf_symbols *e, uint64_t vaddr);

/* The calls inlined at vaddr (Go's, go_pclntab.h), as their names joined
 * by '\n', the innermost first; the function that holds them is
 * elf_symbols_lookup's. NULL where none. */
const char *elf_symbols_inlined(const struct elf_symbols *e, uint64_t vaddr);

size_t elf_symbols_count(const struct elf_symbols *e);

/* Where the full symbol table of a stripped file lives: a separate debug file
 * named by the file's build-id, or by its .gnu_debuglink. */
struct elf_debug_ref {
    bool stripped; /* no .symtab of its own: a debug file would add names */
    uint8_t build_id[64];
    size_t build_id_len;
    char debuglink[256]; /* file name, "" if none */
    uint32_t debuglink_crc;
};

const struct elf_debug_ref *elf_symbols_debug_ref(const struct elf_symbols *e);

/* Where the ELF file elf says its debug file is. Returns 0 or -ENOEXEC. */
int elf_debug_ref_read(Elf *elf, struct elf_debug_ref *ref);

/* 0 when debug (open on fd) is the debug file ref names: same build-id, or
 * (without one) the debuglink's CRC over the whole file; else -ESTALE. */
int elf_debug_ref_check(const struct elf_debug_ref *ref, Elf *debug, int fd);

/* Add the function symbols of the debug file open on fd, within the cap the
 * file was read with (over it, refused as above). It must be the one
 * the reference names: same build-id, or (without one) the debuglink's CRC
 * over the whole file. Returns 0, -ESTALE for another file, or -errno. */
int elf_symbols_add_debug(struct elf_symbols *e, int fd);

#endif
