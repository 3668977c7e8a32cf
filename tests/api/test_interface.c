/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The interface file (daemon/io.offcpud.varlink) is the source of every
 * method's parameters; the daemon's tables (api_methods) must say the same:
 * the same names, types and optionality, no more and no fewer. A parameter
 * added or renamed in one place alone fails here.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "check.h"
#include "macro.h"

#define MAX_PARAMS 32

struct declared {
    char name[64];
    char type[32]; /* as written: "?int", "?[]string" */
};

/* The input parameters of "method Short(" in the description: their count,
 * or -1 if the method is not declared. */
static int declared_params(const char *desc, const char *method, struct declared *out, int max)
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

static const char *type_text(const struct vl_param *prm)
{
    static const char *const optional[] = {"?int", "?string", "?[]string", "?bool"};
    static const char *const required[] = {"int", "string", "[]string", "bool"};

    return prm->required ? required[prm->type] : optional[prm->type];
}

static void check_method(const struct vl_method *m)
{
    struct declared d[MAX_PARAMS];
    int n = declared_params(offcpud_interface_description, m->name, d, MAX_PARAMS), table = 0;

    CHECK(n >= 0, "%s is declared in io.offcpud.varlink", m->name);
    for (const struct vl_param *prm = m->params; prm->name; prm++, table++) {
        bool found = false;

        for (int i = 0; i < n; i++)
            if (strcmp(d[i].name, prm->name) == 0) {
                found = true;
                CHECK(strcmp(d[i].type, type_text(prm)) == 0, "%s %s: table %s, interface %s",
                      m->name, prm->name, type_text(prm), d[i].type);
            }
        CHECK(found, "%s's parameter %s (daemon table) is in the interface", m->name, prm->name);
    }
    CHECK(table == n, "%s: %d parameters in the daemon's table, %d in the interface", m->name,
          table, n);
}

int main(void)
{
    const char *p = offcpud_interface_description;
    int methods = 0;

    for (size_t i = 0; i < API_METHODS; i++)
        check_method(&api_methods[i]);
    while ((p = strstr(p, "\nmethod ")))
        methods++, p++;
    CHECK(methods == API_METHODS, "%d methods in the interface, %d in the daemon's table", methods,
          API_METHODS);
    return CHECK_EXIT();
}
