/* SPDX-License-Identifier: GPL-2.0-only */
#include "daemon_call.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "macro.h"
#include "render.h"
#include "varlink_frame.h"

/* the largest reply read: a dump of a busy host for a long window */
#define REPLY_LIMIT (512u << 20)

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

/* An error the user can act on, in the words of the command line: returns
 * its exit code, or -ENOENT for an error not known here. */
static int explain_error(const char *method, const char *error, const json_t *params)
{
    const char *param = json_string_value(json_object_get(params, "parameter"));
    const char *unit = json_string_value(json_object_get(params, "unit"));
    const char *path = json_string_value(json_object_get(params, "path"));
    const char *reason = json_string_value(json_object_get(params, "reason"));
    json_t *oldest = json_object_get(params, "oldest_ns");
    char when[32];

    if (strcmp(error, "org.varlink.service.PermissionDenied") == 0)
        return fail("permission denied by offcpud for %s", method);
    if (strcmp(error, "org.varlink.service.InvalidParameter") == 0 && param &&
        (strcmp(param, "until_ns") == 0 || strcmp(param, "end_ns") == 0))
        return fail("the window ends before it starts: --until must be later than --since "
                    "(durations count back from now: --since 60s --until 10s)");
    if (strcmp(error, "io.offcpud.CgroupNotFound") == 0)
        return fail("no cgroup %s: not a cgroup v2 directory now, nor seen in offcpud's data",
                    path ?: "?");
    if (strcmp(error, "io.offcpud.UnitNotFound") == 0)
        return fail("unknown unit %s: no unit file, and no cgroup of it seen", unit ?: "?");
    if (strcmp(error, "io.offcpud.UnitWithoutCgroup") == 0)
        return fail("unit %s has no cgroup: it is not running, and offcpud has not seen it run",
                    unit ?: "?");
    if (strcmp(error, "io.offcpud.WindowNotRetained") == 0)
        return fail("that window ends before the oldest data offcpud keeps (from %s; see "
                    "retention in offcpuctl status)",
                    render_time(json_integer_value(oldest), when, sizeof(when)));
    if (strcmp(error, "io.offcpud.NotSupported") == 0)
        return fail("not supported by this offcpud: %s", reason ?: "?");
    return -ENOENT;
}

/* daemon_call, and where refused is set, a PermissionDenied is no error:
 * *refused is true and *ret NULL. */
static int call(const struct globals *g, const char *method, json_t *params, json_t **ret,
                bool *refused)
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
    if (r == -EREMOTEIO && refused && strcmp(error, "org.varlink.service.PermissionDenied") == 0) {
        json_decref(reply);
        *refused = true;
        *ret = NULL;
        return EXIT_OK;
    }
    if (r == -EREMOTEIO) {
        describe_params(reply, detail, sizeof(detail));
        r = explain_error(method, error, reply);
        json_decref(reply);
        if (r >= 0)
            return r;
        return fail("daemon error %s%s%s", error, *detail ? ": " : "", detail);
    }
    if (r < 0)
        return fail("%s on %s: %s", method, g->socket, strerror(-r));
    *ret = reply;
    return EXIT_OK;
}

int daemon_call(const struct globals *g, const char *method, json_t *params, json_t **ret)
{
    return call(g, method, params, ret, NULL);
}

int daemon_call_refusable(const struct globals *g, const char *method, json_t *params, json_t **ret,
                          bool *refused)
{
    *refused = false;
    return call(g, method, params, ret, refused);
}
