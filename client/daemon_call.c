/* SPDX-License-Identifier: GPL-2.0-only */
#include "daemon_call.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon_errors.h"
#include "macro.h"
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

/* The errors that say the caller may not read what it asked for. */
static bool is_refusal(const char *error)
{
    return strcmp(error, "org.varlink.service.PermissionDenied") == 0 ||
           strcmp(error, "io.offcpud.OtherUsersTasks") == 0;
}

/* daemon_call, and where refused is set, a refusal is no error: *refused
 * is true and *ret NULL. */
static int call(const struct globals *g, const char *method, json_t *params, json_t **ret,
                bool *refused)
{
    _cleanup_free_ char *error = NULL;
    _cleanup_close_ int fd = vl_connect(g->socket);
    json_t *reply = NULL;
    char detail[512];
    int r;

    if (fd < 0)
        return socket_error(g->socket, fd);
    r = check_server(fd, g->socket);
    if (r != EXIT_OK)
        return r;
    r = vl_call(fd, method, params, REPLY_LIMIT, &reply, &error);
    if (r == -EREMOTEIO && refused && is_refusal(error)) {
        json_decref(reply);
        *refused = true;
        *ret = NULL;
        return EXIT_OK;
    }
    if (r == -EREMOTEIO) {
        describe_params(reply, detail, sizeof(detail));
        r = daemon_error_explain(g->socket, method, params, error, reply);
        json_decref(reply);
        if (r >= 0)
            return r;
        return fail("daemon error %s%s%s", error, *detail ? ": " : "", detail);
    }
    if (r < 0)
        return fail("%s on %s: %s", method, g->socket, strerror(-r));
    answer_notes_print(params, reply);
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
