/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpuctl: asks offcpud for off-CPU stacks and its status. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "duration.h"
#include "macro.h"
#include "protocol.h"
#include "render.h"
#include "varlink_frame.h"

/* the largest reply read: a dump of a busy host for a long window */
#define REPLY_LIMIT (512u << 20)

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

struct globals {
    const char *socket;
    bool json;
};

struct command {
    const char *name;
    int (*run)(const struct globals *g, int argc, char **argv);
    const char *summary;
};

/* Every error is one line on stderr, "offcpuctl: cause"; returns the exit code. */
static int report(int code, const char *fmt, va_list ap)
{
    fputs("offcpuctl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(code == EXIT_USAGE ? " (see offcpuctl --help)\n" : "\n", stderr);
    return code;
}

__attribute__((format(printf, 1, 2))) static int fail(const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = report(EXIT_ERROR, fmt, ap);
    va_end(ap);
    return r;
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = report(EXIT_USAGE, fmt, ap);
    va_end(ap);
    return r;
}

/* getopt's own messages would not be in our one-line form. */
static int option_error(int c, char **argv)
{
    if (c == ':')
        return usage_error("option '%s' needs a value", argv[optind - 1]);
    return usage_error("unknown option '%s'", argv[optind - 1]);
}

/* "k=v, k=v" of an error's parameters, for a one-line message. */
static void describe_params(const json_t *params, char *buf, size_t size)
{
    const char *key;
    json_t *v;
    size_t len = 0;

    buf[0] = '\0';
    json_object_foreach((json_t *)params, key, v)
    {
        _cleanup_free_ char *text = json_is_string(v) ? NULL : json_dumps(v, JSON_ENCODE_ANY);

        len += snprintf(buf + len, len < size ? size - len : 0, "%s%s=%s", len ? ", " : "", key,
                        text ?: json_string_value(v));
    }
}

/* offcpud runs as root: a socket served by anyone else (who replaced it, or
 * set OFFCPUD_SOCKET) would answer with stacks of its own making. Our own
 * uid is trusted too: a test daemon of one's own. */
static int check_server(int fd, const char *path)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return fail("cannot tell who serves %s: %s", path, strerror(errno));
    if (cred.uid != 0 && cred.uid != getuid())
        return fail("refusing %s: it is served by uid %u, not root (not offcpud)", path,
                    (unsigned)cred.uid);
    return EXIT_OK;
}

/* Call method on the daemon; on failure prints the one-line cause. */
static int call(const struct globals *g, const char *method, json_t *params, json_t **ret)
{
    _cleanup_free_ char *error = NULL;
    _cleanup_close_ int fd = vl_connect(g->socket);
    json_t *reply = NULL;
    char detail[512];
    int r;

    if (fd < 0)
        return fail("cannot connect to %s: %s%s", g->socket, strerror(-fd),
                    fd == -ENOENT || fd == -ECONNREFUSED ? " (is offcpud running?)" : "");
    r = check_server(fd, g->socket);
    if (r != EXIT_OK)
        return r;
    r = vl_call(fd, method, params, REPLY_LIMIT, &reply, &error);
    if (r == -EREMOTEIO) {
        describe_params(reply, detail, sizeof(detail));
        json_decref(reply);
        if (strcmp(error, "org.varlink.service.PermissionDenied") == 0)
            return fail("permission denied by offcpud for %s", method);
        return fail("daemon error %s%s%s", error, *detail ? ": " : "", detail);
    }
    if (r < 0)
        return fail("%s on %s: %s", method, g->socket, strerror(-r));
    *ret = reply;
    return EXIT_OK;
}

static int print_json(const json_t *v)
{
    if (json_dumpf(v, stdout, JSON_INDENT(2)) < 0)
        return fail("writing output: %s", strerror(errno));
    putchar('\n');
    return EXIT_OK;
}

/* "1763860000.123456789" to ns, exactly: a double would be off by hundreds of
 * ns at today's times, enough to move a window's edge across a snapshot's. */
static int parse_unix_time(const char *s, int64_t *ret)
{
    int64_t secs = 0, frac = 0;
    int digits = 0;

    if (!isdigit((unsigned char)*s))
        return -EINVAL;
    for (; isdigit((unsigned char)*s); s++) {
        if (secs > (INT64_MAX / 1000000000 - 9) / 10)
            return -ERANGE;
        secs = secs * 10 + (*s - '0');
    }
    if (*s == '.')
        for (s++; isdigit((unsigned char)*s); s++, digits++)
            if (digits < 9)
                frac = frac * 10 + (*s - '0');
    if (*s)
        return -EINVAL;
    for (; digits < 9; digits++)
        frac *= 10;
    *ret = secs * 1000000000 + frac;
    return 0;
}

/* "60s" back from now, or "@1763860000.5", an absolute Unix time. */
static int parse_time(const char *opt, const char *arg, json_t *params, const char *rel_key,
                      const char *abs_key)
{
    uint64_t ns;

    if (arg[0] == '@') {
        int64_t abs_ns;

        if (parse_unix_time(arg + 1, &abs_ns) < 0)
            return usage_error("invalid time '%s' for %s (use @UNIXSECONDS[.FRACTION])", arg, opt);
        json_object_set_new(params, abs_key, json_integer(abs_ns));
        return 0;
    }
    if (duration_parse(arg, &ns) < 0)
        return usage_error("invalid duration '%s' for %s (use e.g. 500ms, 60s, 5m, 1h)", arg, opt);
    json_object_set_new(params, rel_key, json_integer((json_int_t)ns));
    return 0;
}

static int parse_id(const char *opt, const char *arg, json_t *params, const char *key)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(arg, &end, 10);
    if (errno || *end || end == arg || v <= 0 || v > 0x7fffffff)
        return usage_error("invalid %s '%s' (a positive number)", opt, arg);
    json_object_set_new(params, key, json_integer(v));
    return 0;
}

static int parse_group_by(const char *arg, json_t *params)
{
    _cleanup_free_ char *copy = strdup(arg);
    json_t *a = json_array();
    char *save = NULL;

    json_object_set_new(params, "group_by", a);
    for (char *f = strtok_r(copy, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
        if (!group_by_field(f))
            return usage_error("invalid --group-by field '%s' (%s)", f, group_by_fields_text());
        json_array_append_new(a, json_string(f));
    }
    return 0;
}

/* What the empty answer was about, for "no off-CPU data for ...". */
static void describe_filters(const json_t *params, char *buf, size_t size)
{
    static const char *const keys[] = {"pid", "tid", "cgroup", "comm", "state"};
    size_t len = 0;

    for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
        json_t *v = json_object_get(params, keys[i]);

        if (!v)
            continue;
        if (json_is_integer(v))
            len += snprintf(buf + len, size - len, " for %s %lld", keys[i],
                            (long long)json_integer_value(v));
        else
            len += snprintf(buf + len, size - len, " for %s %s", keys[i], json_string_value(v));
        if (len >= size)
            break;
    }
    if (len == 0)
        snprintf(buf, size, " at all");
}

static void dump_usage(FILE *f)
{
    fprintf(f, "Usage: offcpuctl [--socket PATH] [--json] dump [OPTIONS]\n"
               "Print off-CPU stacks as folded lines (value: microseconds).\n\n"
               "  --pid PID              a process, all its threads\n"
               "  --tid TID              one thread\n"
               "  --cgroup PATH          a cgroup v2 and those below it\n"
               "  --comm NAME            threads of that name\n"
               "  --state S|D|R|I        task state when it blocked\n"
               "  --since DURATION|@T    start: back from now (60s, 5m) or a Unix time\n"
               "  --until DURATION|@T    end: back from now or a Unix time (default now)\n"
               "  --min-total DURATION   drop stacks with less time than this\n"
               "  --group-by FIELDS      keep apart by pid,tid,state,cgroup\n"
               "  --format folded|json   output format (default folded)\n"
               "  --frame-detail         with json: each user frame's file, offset, build-id\n");
}

static int cmd_dump(const struct globals *g, int argc, char **argv)
{
    static const struct option opts[] = {
        {"pid", required_argument, NULL, 'p'},
        {"tid", required_argument, NULL, 't'},
        {"cgroup", required_argument, NULL, 'c'},
        {"comm", required_argument, NULL, 'n'},
        {"state", required_argument, NULL, 's'},
        {"since", required_argument, NULL, 'S'},
        {"until", required_argument, NULL, 'U'},
        {"min-total", required_argument, NULL, 'm'},
        {"group-by", required_argument, NULL, 'g'},
        {"format", required_argument, NULL, 'f'},
        {"frame-detail", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    json_t *params = json_object(), *reply = NULL;
    bool json_out = g->json;
    char what[256];
    uint64_t ns;
    int c, r = 0, n;

    optind = 1;
    opterr = 0;
    while (r == 0 && (c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            r = parse_id("--pid", optarg, params, "pid");
            break;
        case 't':
            r = parse_id("--tid", optarg, params, "tid");
            break;
        case 'c':
            json_object_set_new(params, "cgroup", json_string(optarg));
            break;
        case 'n':
            json_object_set_new(params, "comm", json_string(optarg));
            break;
        case 's':
            if (!protocol_state_valid(optarg))
                r = usage_error("invalid --state '%s' (one of %s)", optarg, PROTOCOL_STATES);
            else
                json_object_set_new(params, "state", json_string(optarg));
            break;
        case 'S':
            r = parse_time("--since", optarg, params, "since_ns", "start_ns");
            break;
        case 'U':
            r = parse_time("--until", optarg, params, "until_ns", "end_ns");
            break;
        case 'm':
            if (duration_parse(optarg, &ns) < 0)
                r = usage_error("invalid duration '%s' for --min-total", optarg);
            else
                json_object_set_new(params, "min_total_ns", json_integer((json_int_t)ns));
            break;
        case 'g':
            r = parse_group_by(optarg, params);
            break;
        case 'f':
            if (strcmp(optarg, "json") == 0)
                json_out = true;
            else if (strcmp(optarg, "folded") == 0)
                json_out = false;
            else
                r = usage_error("invalid --format '%s' (folded or json)", optarg);
            break;
        case 'F':
            json_object_set_new(params, "frame_detail", json_true());
            break;
        case 'h':
            dump_usage(stdout);
            json_decref(params);
            return EXIT_OK;
        default:
            r = option_error(c, argv);
        }
    }
    if (r == 0 && optind < argc)
        r = usage_error("unexpected argument '%s'", argv[optind]);
    /* folded lines have nowhere to put it */
    if (r == 0 && !json_out && json_object_get(params, "frame_detail"))
        r = usage_error("--frame-detail needs --json or --format json");
    if (r == 0)
        r = call(g, "io.offcpud.Dump", params, &reply);
    if (r != 0) {
        json_decref(params);
        return r;
    }
    if (json_array_size(json_object_get(reply, "stacks")) == 0) {
        describe_filters(params, what, sizeof(what));
        json_decref(params);
        json_decref(reply);
        return fail("no off-CPU data%s in that window", what);
    }
    json_decref(params);
    if (json_out) {
        r = print_json(reply);
    } else {
        n = render_folded(stdout, reply);
        r = n < 0 ? fail("rendering: %s", strerror(-n)) : EXIT_OK;
    }
    json_decref(reply);
    if (r == EXIT_OK && fflush(stdout) != 0)
        r = fail("writing output: %s", strerror(errno));
    return r;
}

static int cmd_status(const struct globals *g, int argc, char **argv)
{
    json_t *reply = NULL;
    int r;

    if (argc > 1)
        return usage_error("status takes no arguments");
    r = call(g, "io.offcpud.Status", NULL, &reply);
    if (r != 0)
        return r;
    r = g->json ? print_json(reply) : render_status(stdout, reply);
    json_decref(reply);
    return r;
}

static const struct command commands[] = {
    {"dump", cmd_dump, "print off-CPU stacks (folded, or --json)"},
    {"status", cmd_status, "show the daemon's health and figures"},
};

static void usage(FILE *f)
{
    fprintf(f, "Usage: offcpuctl [--socket PATH] [--json] COMMAND [OPTIONS]\n"
               "Query offcpud, the always-on off-CPU profiler.\n\nCommands:\n");
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\nOptions:\n"
            "  -s, --socket PATH   daemon socket (default $OFFCPUD_SOCKET or %s)\n"
            "  -j, --json          machine-readable output\n"
            "  -h, --help          this help; 'offcpuctl dump --help' for dump's options\n"
            "  -V, --version       show the version\n",
            PROTOCOL_SOCKET_PATH);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    struct globals g = {.socket = protocol_socket_path()};
    int c;

    /* "+": stop at the command; its options are its own */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:s:jhV", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            g.socket = optarg;
            break;
        case 'j':
            g.json = true;
            break;
        case 'h':
            usage(stdout);
            return EXIT_OK;
        case 'V':
            printf("offcpuctl %s\n", OFFCPUD_VERSION);
            return EXIT_OK;
        default:
            return option_error(c, argv);
        }
    }
    if (optind >= argc)
        return usage_error("no command given");
    for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
        if (strcmp(argv[optind], commands[i].name) == 0)
            return commands[i].run(&g, argc - optind, argv + optind);
    return usage_error("unknown command '%s'", argv[optind]);
}
