/* SPDX-License-Identifier: GPL-2.0-only */
#include "varlink_frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "array.h"
#include "macro.h"

#define READ_CHUNK 65536

void vl_input_init(struct vl_input *in, size_t limit)
{
    *in = (struct vl_input){.limit = limit};
}

void vl_input_done(struct vl_input *in)
{
    free(in->data);
    *in = (struct vl_input){0};
}

void vl_output_init(struct vl_output *out, size_t limit)
{
    *out = (struct vl_output){.limit = limit};
}

void vl_output_done(struct vl_output *out)
{
    free(out->data);
    *out = (struct vl_output){0};
}

ssize_t vl_input_read(struct vl_input *in, int fd)
{
    size_t room = in->limit + 1 > in->len ? in->limit + 1 - in->len : 0;
    ssize_t n;
    int r;

    if (room == 0)
        return -EMSGSIZE;
    if (room > READ_CHUNK)
        room = READ_CHUNK;
    r = array_reserve(&in->data, &in->cap, in->len + room, 1, 4096);
    if (r < 0)
        return r;
    n = read(fd, in->data + in->len, room);
    if (n < 0)
        return -errno;
    in->len += n;
    /* over the limit without a terminator: it can only get larger */
    if (in->len > in->limit && !memchr(in->data + in->scanned, '\0', in->len - in->scanned))
        return -EMSGSIZE;
    return n;
}

bool vl_input_complete(struct vl_input *in)
{
    if (in->len > in->scanned && memchr(in->data + in->scanned, '\0', in->len - in->scanned))
        return true;
    in->scanned = in->len;
    return false;
}

int vl_input_next(struct vl_input *in, json_t **ret, char *reason, size_t reason_size)
{
    char *end =
        in->len > in->scanned ? memchr(in->data + in->scanned, '\0', in->len - in->scanned) : NULL;
    size_t len;
    json_error_t err;
    json_t *msg;

    if (!end) {
        in->scanned = in->len;
        return 0;
    }
    in->scanned = 0;
    len = end - in->data;
    msg = json_loadb(in->data, len, JSON_REJECT_DUPLICATES, &err);
    memmove(in->data, end + 1, in->len - len - 1);
    in->len -= len + 1;
    if (!msg || !json_is_object(msg)) {
        if (reason)
            snprintf(reason, reason_size, "%s", msg ? "a message must be a JSON object" : err.text);
        json_decref(msg);
        return -EBADMSG;
    }
    *ret = msg;
    return 1;
}

struct appending {
    struct vl_output *out;
    int error;
};

/* jansson's pieces of a message, each added as it comes (the NUL ending the
 * message counted in the limit) */
static int append_piece(const char *piece, size_t size, void *userdata)
{
    struct appending *a = userdata;
    struct vl_output *out = a->out;

    if (out->len + size + 1 > out->limit) {
        a->error = -ENOBUFS;
        return -1;
    }
    if (array_reserve(&out->data, &out->cap, out->len + size + 1, 1, 4096) < 0) {
        a->error = -ENOMEM;
        return -1;
    }
    memcpy(out->data + out->len, piece, size);
    out->len += size;
    return 0;
}

/* One pass: measuring the message first (json_dumpb without a buffer)
 * serialized it twice, most of a large reply's time. */
int vl_output_append(struct vl_output *out, const json_t *msg)
{
    struct appending a = {.out = out};
    size_t was;

    /* written bytes at the front are dropped before growing */
    if (out->start > 0) {
        memmove(out->data, out->data + out->start, out->len - out->start);
        out->len -= out->start;
        out->start = 0;
    }
    was = out->len;
    if (json_dump_callback(msg, append_piece, &a, JSON_COMPACT) < 0 || out->len == was) {
        out->len = was; /* nothing of it is queued */
        return a.error ?: -EINVAL;
    }
    /* room for it was kept by append_piece */
    out->data[out->len++] = '\0';
    return 0;
}

int vl_output_flush(struct vl_output *out, int fd)
{
    while (out->start < out->len) {
        ssize_t n =
            send(fd, out->data + out->start, out->len - out->start, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        out->start += n;
    }
    out->start = out->len = 0;
    /* a large reply's buffer is not kept for the life of the connection */
    if (out->cap > 1024 * 1024) {
        free(out->data);
        out->data = NULL;
        out->cap = 0;
    }
    return 0;
}

json_t *vl_reply_new(json_t *params, bool continues)
{
    json_t *m = json_object();

    json_object_set_new(m, "parameters", params ? params : json_object());
    if (continues)
        json_object_set_new(m, "continues", json_true());
    return m;
}

json_t *vl_error_new(const char *name, json_t *params)
{
    json_t *m = json_object();

    json_object_set_new(m, "error", json_string(name));
    json_object_set_new(m, "parameters", params ? params : json_object());
    return m;
}

int vl_connect(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd;

    if (strlen(path) >= sizeof(sa.sun_path))
        return -ENAMETOOLONG;
    strcpy(sa.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int r = -errno;

        close(fd);
        return r;
    }
    return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += w;
        n -= w;
    }
    return 0;
}

int vl_call(int fd, const char *method, json_t *params, size_t reply_limit, json_t **ret_params,
            char **ret_error)
{
    json_t *call = json_pack("{s:s, s:o}", "method", method, "parameters",
                             params ? json_incref(params) : json_object());
    _cleanup_free_ char *text = NULL;
    struct vl_input in;
    json_t *reply = NULL, *error;
    int r;

    if (!call)
        return -ENOMEM;
    text = json_dumps(call, JSON_COMPACT);
    json_decref(call);
    if (!text)
        return -ENOMEM;
    /* a daemon that refuses the connection says why before closing: read
     * that, though our request could not be written */
    r = write_all(fd, text, strlen(text) + 1);
    if (r < 0 && r != -EPIPE && r != -ECONNRESET)
        return r;

    vl_input_init(&in, reply_limit);
    for (;;) {
        ssize_t n;

        r = vl_input_next(&in, &reply, NULL, 0);
        if (r != 0)
            break;
        n = vl_input_read(&in, fd);
        if (n == 0)
            r = -ECONNRESET;
        else if (n == -EINTR)
            continue;
        else if (n < 0)
            r = (int)n;
        if (n <= 0)
            break;
    }
    vl_input_done(&in);
    if (r < 0)
        return r;

    *ret_params = json_incref(json_object_get(reply, "parameters"));
    if (!*ret_params)
        *ret_params = json_object();
    error = json_object_get(reply, "error");
    if (json_is_string(error)) {
        *ret_error = strdup(json_string_value(error));
        json_decref(reply);
        return -EREMOTEIO;
    }
    json_decref(reply);
    return 0;
}
