/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Runs a fuzz target over every file of the directories given: the corpus
 * a fuzzer found, and the crashes it found once fixed, as a plain test.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rbe");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, n;

    if (!f)
        return -errno;
    do {
        if (len == cap) {
            uint8_t *p = realloc(buf, cap = cap ? cap * 2 : 4096);

            if (!p) {
                free(buf);
                fclose(f);
                return -ENOMEM;
            }
            buf = p;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    size_t files = 0;

    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        DIR *dir = opendir(argv[i]);
        struct dirent *e;

        if (!dir) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        while ((e = readdir(dir))) {
            char path[4096];

            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
            if (run_file(path) < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                closedir(dir);
                return 1;
            }
            files++;
        }
        closedir(dir);
    }
    printf("%zu inputs replayed\n", files);
    return files ? 0 : 1;
}
