/* SPDX-License-Identifier: GPL-2.0-only */
#include "eh_frame_hdr.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* The only table encoding linkers write, and the only one that can be
 * searched: 4-byte signed offsets from the header's own address. */
#define TABLE_ENC (DW_EH_PE_datarel | DW_EH_PE_sdata4)

/* Bytes of a value in encoding enc, for the two fields before the table;
 * 0 for what is not written there. */
static size_t encoded_size(uint8_t enc)
{
    switch (enc & 0x0f) {
    case DW_EH_PE_udata4:
    case DW_EH_PE_sdata4:
        return 4;
    case DW_EH_PE_absptr:
    case DW_EH_PE_udata8:
    case DW_EH_PE_sdata8:
        return 8;
    default:
        return 0;
    }
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* The header's segment: where it lies in the file and in memory. */
static int find_segment(Elf *elf, GElf_Phdr *ret)
{
    size_t nphdr;

    if (elf_getphdrnum(elf, &nphdr) < 0)
        return -ENODATA;
    for (size_t i = 0; i < nphdr; i++)
        if (gelf_getphdr(elf, (int)i, ret) && ret->p_type == PT_GNU_EH_FRAME)
            return 0;
    return -ENODATA;
}

int eh_frame_hdr_fde_starts(Elf *elf, uint64_t **ret, size_t *n)
{
    _cleanup_free_ uint64_t *starts = NULL;
    size_t ptr_size, count_size, pos;
    const uint8_t *p;
    uint64_t count = 0;
    Elf_Data *data;
    GElf_Phdr ph;

    if (find_segment(elf, &ph) < 0 || ph.p_filesz < 4)
        return -ENODATA;
    data = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
    if (!data || data->d_size < 4)
        return -ENODATA;
    p = data->d_buf;
    ptr_size = encoded_size(p[1]);
    count_size = encoded_size(p[2]);
    /* a count relative to anything makes no sense; nor does a table
     * without a count */
    if (p[0] != 1 || p[1] == DW_EH_PE_omit || !ptr_size || !count_size || (p[2] & 0x70) ||
        p[3] != TABLE_ENC)
        return -ENODATA;
    pos = 4 + ptr_size;
    if (data->d_size < pos + count_size)
        return -ENODATA;
    /* little-endian, as x86-64 is; only the low 32 bits of an 8-byte count
     * can be valid */
    memcpy(&count, p + pos, 4);
    pos += count_size;
    if (count > EH_FRAME_HDR_FDES_MAX)
        return -E2BIG;
    if (count > (data->d_size - pos) / 8)
        return -ENODATA;
    starts = calloc(count ? count : 1, sizeof(*starts));
    if (!starts)
        return -ENOMEM;
    for (uint64_t i = 0; i < count; i++) {
        int32_t rel;

        memcpy(&rel, p + pos + i * 8, sizeof(rel));
        starts[i] = ph.p_vaddr + (uint64_t)(int64_t)rel;
    }
    /* sorted by the linker; a file that says otherwise is sorted here rather
     * than trusted */
    qsort(starts, count, sizeof(*starts), compare_u64);
    *ret = starts;
    starts = NULL;
    *n = count;
    return 0;
}
