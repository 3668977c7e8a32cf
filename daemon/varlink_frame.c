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

/* Bytes asked of read() at once: large enough that a big reply takes few
 * calls, and never more than one message of the limit may hold. */
#define READ_CHUNK 65536

/* A flushed queue larger than this is freed, so that one large reply does not
 * pin its buffer for the life of the connection. */
#define OUTPUT_KEEP (1024 * 1024)

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

/* Whether every buffered message, NUL included, is within the limit, and the
 * unterminated rest can still end within it (it needs one more byte, the NUL). */
static bool input_fits(const struct vl_input *in)
{
    const char *p = in->data, *end = in->data + in->len;

    /* nothing can be longer than the whole buffer: the common case costs nothing */
    if (in->len < in->limit)
        return true;
    while (p < end) {
        const char *nul = memchr(p, '\0', end - p);

        if (!nul)
            return (size_t)(end - p) < in->limit;
        if ((size_t)(nul - p) + 1 > in->limit)
            return false;
        p = nul + 1;
    }
    return true;
}

ssize_t vl_input_read(struct vl_input *in, int fd)
{
    size_t room = in->limit < READ_CHUNK ? in->limit : READ_CHUNK;
    ssize_t n;
    int r;

    /* refused input is not read further: the caller must drop the connection */
    if (!input_fits(in))
        return -EMSGSIZE;
    r = array_reserve(&in->data, &in->cap, in->len + room, 1, 4096);
    if (r < 0)
        return r;
    n = read(fd, in->data + in->len, room);
    if (n < 0)
        return -errno;
    in->len += n;
    return input_fits(in) ? n : -EMSGSIZE;
}

int vl_input_next(struct vl_input *in, json_t **ret, char *reason, size_t reason_size)
{
    char *nul = in->len ? memchr(in->data, '\0', in->len) : NULL;
    size_t len;
    json_error_t err;
    json_t *msg;

    if (!nul)
        return 0;
    len = nul - in->data;
    /* the exact length: a message may not run into the next one */
    msg = json_loadb(in->data, len, JSON_REJECT_DUPLICATES, &err);
    /* consumed either way, so that one bad message does not block the next */
    memmove(in->data, nul + 1, in->len - len - 1);
    in->len -= len + 1;
    if (msg && json_is_object(msg)) {
        *ret = msg;
        return 1;
    }
    if (reason && msg)
        snprintf(reason, reason_size, "a message must be a JSON object");
    else if (reason)
        snprintf(reason, reason_size, "invalid JSON at byte %d: %s", err.position, err.text);
    json_decref(msg);
    return -EBADMSG;
}

/* Drop what was written from the front, so that the queue only holds what is
 * still to be sent and its limit counts exactly that. */
static void output_compact(struct vl_output *out)
{
    if (out->start == 0)
        return;
    memmove(out->data, out->data + out->start, out->len - out->start);
    out->len -= out->start;
    out->start = 0;
}

int vl_output_append(struct vl_output *out, const json_t *msg)
{
    size_t size = json_dumpb(msg, NULL, 0, JSON_COMPACT), need;

    if (size == 0)
        return -EINVAL;
    output_compact(out);
    need = out->len + size + 1;
    if (need > out->limit)
        return -ENOBUFS;
    if (array_reserve(&out->data, &out->cap, need, 1, 4096) < 0)
        return -ENOMEM;
    if (json_dumpb(msg, out->data + out->len, size, JSON_COMPACT) != size)
        return -EINVAL;
    out->data[out->len + size] = '\0';
    out->len = need;
    return 0;
}

int vl_output_flush(struct vl_output *out, int fd)
{
    while (out->start < out->len) {
        /* MSG_DONTWAIT: a client that does not read must never block the daemon */
        ssize_t n = send(fd, out->data + out->start, out->len - out->start,
                         MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        out->start += n;
    }
    out->start = out->len = 0;
    if (out->cap > OUTPUT_KEEP) {
        free(out->data);
        out->data = NULL;
        out->cap = 0;
    }
    return 0;
}

/* {key: value, "parameters": params or {}}; steals both. */
static json_t *message_new(const char *key, json_t *value, json_t *params)
{
    json_t *m = json_object();

    if (!params)
        params = json_object();
    if (!m || !params || json_object_set_new(m, key, value) < 0 ||
        json_object_set_new(m, "parameters", params) < 0) {
        /* set_new stole what it was given even on failure */
        json_decref(m);
        return NULL;
    }
    return m;
}

json_t *vl_reply_new(json_t *params, bool continues)
{
    json_t *m = message_new("parameters", NULL, params);

    if (m && continues && json_object_set_new(m, "continues", json_true()) < 0) {
        json_decref(m);
        return NULL;
    }
    return m;
}

json_t *vl_error_new(const char *name, json_t *params)
{
    return message_new("error", json_string(name), params);
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

static int send_call(int fd, const char *method, json_t *params)
{
    json_t *call = json_pack("{s:s, s:O?}", "method", method, "parameters", params);
    _cleanup_free_ char *text = NULL;

    if (!call)
        return -ENOMEM;
    text = json_dumps(call, JSON_COMPACT);
    json_decref(call);
    if (!text)
        return -ENOMEM;
    return write_all(fd, text, strlen(text) + 1); /* the NUL ends the message */
}

/* Read until one whole message is there. Only newly read bytes are searched
 * for its end, so that a reply of many megabytes costs linear time. */
static int receive_one(int fd, size_t limit, json_t **ret)
{
    struct vl_input in;
    int r = 0;

    vl_input_init(&in, limit);
    while (r == 0) {
        ssize_t n = vl_input_read(&in, fd);

        if (n == -EINTR)
            continue;
        if (n <= 0) {
            r = n == 0 ? -ECONNRESET : (int)n;
            break;
        }
        if (memchr(in.data + in.len - n, '\0', n))
            r = vl_input_next(&in, ret, NULL, 0);
    }
    vl_input_done(&in);
    return r < 0 ? r : 0;
}

/* The first reply is the answer. A reply with "continues": true would be
 * followed by more; offcpud's methods answer in one reply, so the rest is
 * neither read nor waited for (the caller closes the connection). */
int vl_call(int fd, const char *method, json_t *params, size_t reply_limit, json_t **ret_params,
            char **ret_error)
{
    json_t *reply = NULL, *error, *parameters;
    int r;

    r = send_call(fd, method, params);
    if (r < 0)
        return r;
    r = receive_one(fd, reply_limit, &reply);
    if (r < 0)
        return r;

    error = json_object_get(reply, "error");
    parameters = json_object_get(reply, "parameters");
    if ((error && !json_is_string(error)) || (parameters && !json_is_object(parameters))) {
        json_decref(reply);
        return -EBADMSG;
    }
    *ret_params = parameters ? json_incref(parameters) : json_object();
    r = 0;
    if (error) {
        *ret_error = strdup(json_string_value(error));
        r = *ret_error ? -EREMOTEIO : -ENOMEM;
        if (r == -ENOMEM) {
            json_decref(*ret_params);
            *ret_params = NULL;
        }
    }
    json_decref(reply);
    return r;
}
