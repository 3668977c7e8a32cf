/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The interface file (daemon/api/io.offcpud.varlink) is the source of every
 * method's parameters; the daemon's tables (api_methods) must say the same:
 * the same names, types and optionality, no more and no fewer. A parameter
 * added or renamed in one place alone fails here.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "check.h"
#include "interface_params.h"
#include "macro.h"

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
