/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The client's selection options against the interface file, the one
 * source: every request parameter an option of offcpuctl puts in a request
 * is one that the methods taking a selection declare, with its type, and
 * every selection parameter they declare is one an option sets.
 */
#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "cli.h"
#include "interface_params.h"
#include "macro.h"
#include "selection.h"

extern const char offcpud_interface_description[];

/* Each selection option with a value it takes; the window twice: back from
 * now and as a Unix time (since_ns/start_ns, until_ns/end_ns). */
static const struct {
    int c;
    const char *arg;
} options[] = {
    {'p', "42"}, {'t', "43"},  {'c', "/system.slice"}, {'u', "nginx"}, {'n', "bash"},
    {'s', "D"},  {'S', "60s"}, {'S', "@1700000000"},   {'U', "10s"},   {'U', "@1700000001"},
    {'W', "1s"}, {'I', ""},
};

static const char *value_type(const json_t *v)
{
    if (json_is_integer(v))
        return "?int";
    if (json_is_boolean(v))
        return "?bool";
    if (json_is_array(v))
        return "?[]string";
    return "?string";
}

/* Every key of params is declared by method, with the type of its value. */
static void check_declared(const char *method, const json_t *params)
{
    struct declared d[MAX_PARAMS];
    int n = declared_params(offcpud_interface_description, method, d, MAX_PARAMS);
    const char *key;
    json_t *v;

    CHECK(n >= 0, "%s is declared", method);
    json_object_foreach((json_t *)params, key, v)
    {
        bool found = false;

        for (int i = 0; i < n; i++)
            if (strcmp(d[i].name, key) == 0) {
                found = true;
                CHECK(strcmp(d[i].type, value_type(v)) == 0, "%s %s: client %s, interface %s",
                      method, key, value_type(v), d[i].type);
            }
        CHECK(found, "%s: the client's parameter %s is in the interface", method, key);
    }
}

/* Every parameter of method the client's options do not set is one of
 * others: the command's own, not the selection's. */
static void check_covered(const char *method, const json_t *params, const char *const *others)
{
    struct declared d[MAX_PARAMS];
    int n = declared_params(offcpud_interface_description, method, d, MAX_PARAMS);

    for (int i = 0; i < n; i++) {
        bool other = false;

        for (const char *const *o = others; *o; o++)
            other = other || strcmp(*o, d[i].name) == 0;
        CHECK(other || json_object_get(params, d[i].name),
              "%s's parameter %s is set by a client option", method, d[i].name);
    }
}

int main(void)
{
    static const char *const dump_own[] = {"frame_detail", "histograms", "limit", NULL};
    static const char *const folded_own[] = {"limit", NULL};
    static const char *const top_own[] = {"histograms", NULL};
    static const char *const timeline_own[] = {"buckets", NULL};
    static const char *const stuck_own[] = {"min_ns", NULL};
    json_auto_t *params = json_object(), *who = NULL;

    for (size_t i = 0; i < ARRAY_SIZE(options); i++)
        CHECK(selection_option(options[i].c, options[i].arg, params) == EXIT_OK, "-%c %s",
              options[i].c, options[i].arg);
    /* the window's keys, --min-wait and --no-idle apart: Stuck has none (it has --min) */
    who = json_deep_copy(params);
    json_object_del(who, "since_ns");
    json_object_del(who, "until_ns");
    json_object_del(who, "start_ns");
    json_object_del(who, "end_ns");
    json_object_del(who, "min_wait_ns");
    json_object_del(who, "no_idle");
    check_declared("io.offcpud.Stuck", who);
    check_covered("io.offcpud.Stuck", who, stuck_own);
    check_declared("io.offcpud.Timeline", params);
    check_covered("io.offcpud.Timeline", params, timeline_own);
    CHECK(selection_min_total("5ms", params) == EXIT_OK, "--min-total");
    CHECK(selection_group_by("pid,tid", params) == EXIT_OK, "--group-by");
    check_declared("io.offcpud.Dump", params);
    check_covered("io.offcpud.Dump", params, dump_own);
    /* offcpuctl dump's folded lines come from Folded: the same selection */
    check_declared("io.offcpud.Folded", params);
    check_covered("io.offcpud.Folded", params, folded_own);
    check_declared("io.offcpud.Wakers", params);
    check_covered("io.offcpud.Wakers", params, (const char *const[]){NULL});
    json_object_del(params, "min_total_ns");
    check_declared("io.offcpud.Top", params);
    check_covered("io.offcpud.Top", params, top_own);
    return CHECK_EXIT();
}
