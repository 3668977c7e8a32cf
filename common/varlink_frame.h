/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Varlink framing (https://varlink.org): JSON objects, each terminated by a
 * NUL byte, on a stream socket. Input and output buffers have hard limits so
 * that no peer can make the other side hold unbounded memory.
 */
#ifndef VARLINK_FRAME_H
#define VARLINK_FRAME_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct vl_input {
    char *data;
    size_t len; /* bytes buffered */
    size_t cap;
    size_t limit;   /* largest message accepted, NUL included */
    size_t scanned; /* bytes known to hold no NUL: a large message is searched once */
};

struct vl_output {
    char *data;
    size_t start; /* first byte not yet written */
    size_t len;   /* end of queued bytes */
    size_t cap;
    size_t limit; /* most bytes that may be queued at once */
};

void vl_input_init(struct vl_input *in, size_t limit);
void vl_input_done(struct vl_input *in);
void vl_output_init(struct vl_output *out, size_t limit);
void vl_output_done(struct vl_output *out);

/* Read what fd has into in. Returns bytes read (> 0), 0 at end of file,
 * -EMSGSIZE when the buffered message is over the limit without a NUL yet,
 * or -errno from read (-EAGAIN when nothing is there). */
ssize_t vl_input_read(struct vl_input *in, int fd);

/* Whether a complete message (NUL-terminated) is buffered. */
bool vl_input_complete(struct vl_input *in);

/* Take the next complete message. Returns 1 and *ret (a JSON object), 0 when
 * no complete message is buffered, or -EBADMSG when the message is not a JSON
 * object (it is consumed; reason, if not NULL, says why in one line). */
int vl_input_next(struct vl_input *in, json_t **ret, char *reason, size_t reason_size);

/* Queue msg followed by NUL. -ENOBUFS when the queue would exceed its limit
 * (nothing is queued then). */
int vl_output_append(struct vl_output *out, const json_t *msg);

/* Write what is queued. Returns 0 when the queue is empty, -EAGAIN when the
 * socket is full, or -errno. */
int vl_output_flush(struct vl_output *out, int fd);

static inline bool vl_output_pending(const struct vl_output *out)
{
    return out->len > out->start;
}

/* Build a reply: {"parameters": params, "continues": true?}. Steals params. */
json_t *vl_reply_new(json_t *params, bool continues);

/* Build an error: {"error": name, "parameters": params or {}}. Steals params. */
json_t *vl_error_new(const char *name, json_t *params);

/*
 * Client side: connect to a Unix socket path. Returns fd or -errno.
 */
int vl_connect(const char *path);

/*
 * Client side, blocking: send {"method": method, "parameters": params} (params
 * may be NULL; it is not stolen) and read one reply. On success returns 0 and
 * *ret_params (the reply's parameters, new reference). When the daemon answers
 * with an error returns -EREMOTEIO, *ret_error (malloc'd error name) and
 * *ret_params (its parameters). Other failures return -errno.
 */
int vl_call(int fd, const char *method, json_t *params, size_t reply_limit, json_t **ret_params,
            char **ret_error);

#endif
