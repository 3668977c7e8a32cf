/* SPDX-License-Identifier: GPL-2.0-only */
#include "cfi_digest.h"

#include <errno.h>
#include <gcrypt.h>
#include <stdbool.h>
#include <string.h>

#include "cfi_check.h"

/* Bytes hashed at most for one file and its debug file: past them the file
 * has no digest (and its rows are derived, or refused, as they would be). A
 * crafted file may name one big section many times over. */
#define DIGEST_BYTES_MAX (2ULL * CFI_SECTION_MAX)

struct digest {
    gcry_md_hd_t h;
    uint64_t bytes; /* of sections and segments, so far */
};

/* The sections unwind_rows_derive reads the bytes of (through libdw too). */
static bool cfi_section(const char *name)
{
    return strcmp(name, ".eh_frame") == 0 || strcmp(name, ".eh_frame_hdr") == 0 ||
           strcmp(name, ".debug_frame") == 0;
}

/* Bytes, preceded by their length: no two sequences of pieces read alike. */
static void put(struct digest *d, const void *p, uint64_t n)
{
    gcry_md_write(d->h, &n, sizeof(n));
    if (n)
        gcry_md_write(d->h, p, n);
}

static int put_data(struct digest *d, const Elf_Data *data)
{
    if (!data || !data->d_buf) {
        put(d, NULL, 0);
        return 0;
    }
    d->bytes += data->d_size;
    if (d->bytes > DIGEST_BYTES_MAX)
        return -E2BIG;
    put(d, data->d_buf, data->d_size);
    return 0;
}

static int digest_elf(struct digest *d, Elf *elf)
{
    size_t nphdr, shstrndx;
    Elf_Scn *scn = NULL;
    GElf_Ehdr eh;

    if (!gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &nphdr) < 0 ||
        elf_getshdrstrndx(elf, &shstrndx) < 0)
        return -ENODATA;
    put(d, &eh, sizeof(eh));
    for (size_t i = 0; i < nphdr; i++) {
        GElf_Phdr ph;
        int r = 0;

        if (!gelf_getphdr(elf, (int)i, &ph))
            return -ENODATA;
        put(d, &ph, sizeof(ph));
        /* eh_frame_hdr.c reads the FDE table through the segment */
        if (ph.p_type == PT_GNU_EH_FRAME)
            r = put_data(d,
                         elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE));
        if (r < 0)
            return r;
    }
    while ((scn = elf_nextscn(elf, scn))) {
        const char *name;
        GElf_Shdr sh;
        int r = 0;

        if (!gelf_getshdr(scn, &sh))
            return -ENODATA;
        name = elf_strptr(elf, shstrndx, sh.sh_name) ?: "";
        put(d, &sh, sizeof(sh));
        put(d, name, strlen(name));
        if (cfi_section(name))
            r = put_data(d, elf_rawdata(scn, NULL));
        if (r < 0)
            return r;
    }
    return 0;
}

int cfi_digest_init(void)
{
    if (!gcry_check_version(GCRYPT_VERSION))
        return -EPROTO;
    /* nothing secret is hashed: no locked pool to set up */
    gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
    gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
    return 0;
}

int cfi_digest(Elf *elf, Elf *debug, uint8_t out[CFI_DIGEST_SIZE])
{
    struct digest d = {0};
    int r;

    if (gcry_md_open(&d.h, GCRY_MD_SHA256, 0) != 0)
        return -ENOMEM;
    r = digest_elf(&d, elf);
    /* a file read without its debug file is not one read with it */
    put(&d, "debug", debug ? 5 : 0);
    if (r >= 0 && debug)
        r = digest_elf(&d, debug);
    if (r >= 0)
        memcpy(out, gcry_md_read(d.h, GCRY_MD_SHA256), CFI_DIGEST_SIZE);
    gcry_md_close(d.h);
    return r;
}
