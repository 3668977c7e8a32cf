/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The digest that lets files share rows (cfi_digest.h), over real files
 * (Debian's libc and python3, and a program whose only CFI of its own is
 * .debug_frame): a copy has the file's digest; one byte changed in any
 * section the rows are derived from, or in the PT_GNU_EH_FRAME segment's
 * table, gives another; a byte changed in code gives the same (the rows do
 * not read it); a debug file read with it gives another.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfi_digest.h"
#include "check.h"
#include "macro.h"

struct image {
    char *bytes;
    size_t size;
};

static int image_read(const char *path, struct image *ret)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;

    if (fd < 0 || fstat(fd, &st) < 0)
        return -errno;
    ret->size = (size_t)st.st_size;
    ret->bytes = malloc(ret->size);
    if (!ret->bytes)
        return -ENOMEM;
    return read(fd, ret->bytes, ret->size) == (ssize_t)ret->size ? 0 : -EIO;
}

/* The digest of img with the byte at offset (if any: SIZE_MAX for none)
 * flipped; debug read with it. */
static int digest_flipped(const struct image *img, size_t offset, Elf *debug,
                          uint8_t out[CFI_DIGEST_SIZE])
{
    _cleanup_free_ char *copy = malloc(img->size);
    Elf *elf;
    int r;

    if (!copy)
        return -ENOMEM;
    memcpy(copy, img->bytes, img->size);
    if (offset < img->size)
        copy[offset] ^= 0x01;
    elf = elf_memory(copy, img->size);
    if (!elf)
        return -ENOEXEC;
    r = cfi_digest(elf, debug, out);
    elf_end(elf);
    return r;
}

/* The file offset of the section name's middle byte, or of the segment of
 * type ptype's; SIZE_MAX if there is none. */
static size_t middle_of(Elf *elf, const char *name, uint32_t ptype)
{
    Elf_Scn *scn = NULL;
    size_t shstrndx, nphdr;

    if (ptype != PT_NULL && elf_getphdrnum(elf, &nphdr) == 0)
        for (size_t i = 0; i < nphdr; i++) {
            GElf_Phdr ph;

            if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == ptype && ph.p_filesz)
                return ph.p_offset + ph.p_filesz / 2;
        }
    if (!name || elf_getshdrstrndx(elf, &shstrndx) < 0)
        return SIZE_MAX;
    while ((scn = elf_nextscn(elf, scn))) {
        const char *s;
        GElf_Shdr sh;

        if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS && sh.sh_size &&
            (s = elf_strptr(elf, shstrndx, sh.sh_name)) && strcmp(s, name) == 0)
            return sh.sh_offset + sh.sh_size / 2;
    }
    return SIZE_MAX;
}

static void check_file(const char *path)
{
    static const char *const cfi[] = {".eh_frame", ".eh_frame_hdr", ".debug_frame"};
    uint8_t base[CFI_DIGEST_SIZE], other[CFI_DIGEST_SIZE];
    struct image img = {0};
    Elf *elf, *self;
    size_t at;
    int r;

    r = image_read(path, &img);
    elf = r < 0 ? NULL : elf_memory(img.bytes, img.size);
    r = elf ? cfi_digest(elf, NULL, base) : -ENOEXEC;
    CHECK(r == 0, "%s: digested (%s)", path, strerror(-r));
    if (r < 0)
        goto out;
    r = digest_flipped(&img, SIZE_MAX, NULL, other);
    CHECK(r == 0 && memcmp(base, other, sizeof(base)) == 0, "%s: a copy, the same digest", path);
    for (size_t i = 0; i < ARRAY_SIZE(cfi); i++) {
        at = middle_of(elf, cfi[i], PT_NULL);
        if (at == SIZE_MAX)
            continue;
        r = digest_flipped(&img, at, NULL, other);
        CHECK(r == 0 && memcmp(base, other, sizeof(base)) != 0,
              "%s: a byte of %s changed (at %zu), another digest", path, cfi[i], at);
    }
    at = middle_of(elf, NULL, PT_GNU_EH_FRAME);
    if (at != SIZE_MAX) {
        r = digest_flipped(&img, at, NULL, other);
        CHECK(r == 0 && memcmp(base, other, sizeof(base)) != 0,
              "%s: a byte of PT_GNU_EH_FRAME changed, another digest", path);
    }
    at = middle_of(elf, ".text", PT_NULL);
    r = digest_flipped(&img, at, NULL, other);
    CHECK(at != SIZE_MAX && r == 0 && memcmp(base, other, sizeof(base)) == 0,
          "%s: a byte of .text changed, the same digest", path);
    /* any ELF file as its debug file: read with one, it is not the same */
    self = elf_memory(img.bytes, img.size);
    r = digest_flipped(&img, SIZE_MAX, self, other);
    CHECK(r == 0 && memcmp(base, other, sizeof(base)) != 0, "%s: with a debug file, another digest",
          path);
    elf_end(self);
out:
    elf_end(elf);
    free(img.bytes);
}

int main(int argc, char **argv)
{
    uint8_t out[CFI_DIGEST_SIZE];
    char not_elf[] = "not an ELF file at all";
    Elf *elf;

    elf_version(EV_CURRENT);
    CHECK(cfi_digest_init() == 0, "libgcrypt initialised");
    for (int i = 1; i < argc; i++)
        check_file(argv[i]);
    elf = elf_memory(not_elf, sizeof(not_elf));
    CHECK(!elf || cfi_digest(elf, NULL, out) == -ENODATA, "not ELF: no digest");
    elf_end(elf);
    return CHECK_EXIT();
}
