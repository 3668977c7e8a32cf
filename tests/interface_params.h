/* SPDX-License-Identifier: GPL-2.0-only */
/* A method's input parameters as the Varlink interface file declares them,
 * for the tests that check the daemon's tables and the client's options
 * against that file, the one source. */
#ifndef INTERFACE_PARAMS_H
#define INTERFACE_PARAMS_H

#include <stdio.h>
#include <string.h>

#define MAX_PARAMS 32

struct declared {
    char name[64];
    char type[32]; /* as written: "?int", "?[]string" */
};

/* The input parameters of "method Short(" in the description: their count,
 * or -1 if the method is not declared. */
static inline int declared_params(const char *desc, const char *method, struct declared *out,
                                  int max)
{
    const char *short_name = strrchr(method, '.') + 1;
    char head[96];
    const char *p;
    int n = 0;

    snprintf(head, sizeof(head), "\nmethod %s(", short_name);
    p = strstr(desc, head);
    if (!p)
        return -1;
    p += strlen(head);
    while (*p && *p != ')' && n < max) {
        char name[64], type[32];
        int used;

        if (sscanf(p, " %63[a-z_] : %31[^,)\n] %n", name, type, &used) != 2)
            break;
        snprintf(out[n].name, sizeof(out[n].name), "%s", name);
        snprintf(out[n].type, sizeof(out[n].type), "%s", type);
        n++;
        p += used;
        if (*p == ',')
            p++;
    }
    return n;
}

#endif
