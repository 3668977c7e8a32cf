/* SPDX-License-Identifier: GPL-2.0-only */
/* Varlink framing over a real socketpair: splitting, joining, limits. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "varlink_frame.h"

static void pair(int sv[2])
{
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
}

/* Every split point of two messages still yields both, in order. */
static void test_split_everywhere(void)
{
    static const char text[] = "{\"method\":\"a.b.C\"}\0{\"method\":\"a.b.D\",\"parameters\":{}}";
    size_t total = sizeof(text); /* both NULs */
    int bad = 0;

    for (size_t cut = 1; cut < total; cut++) {
        struct vl_input in;
        json_t *m1 = NULL, *m2 = NULL;
        int sv[2], got = 0;

        pair(sv);
        vl_input_init(&in, 4096);
        write(sv[0], text, cut);
        vl_input_read(&in, sv[1]);
        got += vl_input_next(&in, &m1, NULL, 0);
        write(sv[0], text + cut, total - cut);
        vl_input_read(&in, sv[1]);
        if (!m1)
            got += vl_input_next(&in, &m1, NULL, 0);
        got += vl_input_next(&in, &m2, NULL, 0);
        if (got != 2 || strcmp(json_string_value(json_object_get(m1, "method")), "a.b.C") ||
            strcmp(json_string_value(json_object_get(m2, "method")), "a.b.D"))
            bad++;
        json_decref(m1);
        json_decref(m2);
        vl_input_done(&in);
        close(sv[0]);
        close(sv[1]);
    }
    CHECK(bad == 0, "two messages split at each of %zu points: %d wrong", total - 1, bad);
}

static void test_bad_messages(void)
{
    static const char text[] = "{oops\0[1]\0{\"method\":\"x.y.Z\"}";
    struct vl_input in;
    char reason[128] = "";
    json_t *m = NULL;
    int sv[2], r;

    pair(sv);
    vl_input_init(&in, 4096);
    write(sv[0], text, sizeof(text));
    vl_input_read(&in, sv[1]);
    r = vl_input_next(&in, &m, reason, sizeof(reason));
    CHECK(r == -EBADMSG && reason[0], "malformed JSON: -EBADMSG (%s)", reason);
    r = vl_input_next(&in, &m, reason, sizeof(reason));
    CHECK(r == -EBADMSG, "a JSON array is not a message: %s", reason);
    r = vl_input_next(&in, &m, reason, sizeof(reason));
    CHECK(r == 1 && json_is_object(m), "the next message still parses");
    json_decref(m);
    CHECK(vl_input_next(&in, &m, NULL, 0) == 0, "then nothing is left");
    vl_input_done(&in);
    close(sv[0]);
    close(sv[1]);
}

static void test_oversized(void)
{
    char big[3000];
    struct vl_input in;
    ssize_t r = 0;
    int sv[2];

    memset(big, 'x', sizeof(big));
    pair(sv);
    vl_input_init(&in, 1024);
    write(sv[0], big, sizeof(big));
    for (int i = 0; i < 10 && r >= 0; i++)
        r = vl_input_read(&in, sv[1]);
    CHECK(r == -EMSGSIZE, "a message over the limit: -EMSGSIZE (%zd)", r);
    CHECK(in.len <= 1025, "no more than the limit is buffered (%zu)", in.len);
    vl_input_done(&in);
    close(sv[0]);
    close(sv[1]);
}

static void test_output(void)
{
    struct vl_output out;
    json_t *msg = vl_reply_new(json_pack("{s:s}", "k", "v"), true);
    json_t *err = vl_error_new("org.varlink.service.InvalidParameter",
                               json_pack("{s:s}", "parameter", "pid"));
    char buf[256] = "";
    int sv[2], r, sent = 0;
    ssize_t n;

    pair(sv);
    vl_output_init(&out, 64);
    CHECK(vl_output_append(&out, msg) == 0, "a reply is queued");
    CHECK(vl_output_append(&out, err) == -ENOBUFS, "over the queue limit: -ENOBUFS");
    CHECK(vl_output_flush(&out, sv[0]) == 0 && !vl_output_pending(&out), "flushed");
    n = read(sv[1], buf, sizeof(buf));
    CHECK(n > 0 && buf[n - 1] == '\0' &&
              strcmp(buf, "{\"parameters\":{\"k\":\"v\"},\"continues\":true}") == 0,
          "wire form: %s", buf);
    vl_output_done(&out);

    /* a peer that does not read: the queue waits, nothing is lost */
    vl_output_init(&out, 64 << 20);
    for (int i = 0; i < 20000; i++)
        vl_output_append(&out, err);
    r = vl_output_flush(&out, sv[0]);
    CHECK(r == -EAGAIN && vl_output_pending(&out), "a full socket leaves output pending (%d)", r);
    while (vl_output_pending(&out)) {
        while ((n = read(sv[1], buf, sizeof(buf))) > 0)
            for (ssize_t i = 0; i < n; i++)
                sent += buf[i] == '\0';
        vl_output_flush(&out, sv[0]);
    }
    while ((n = read(sv[1], buf, sizeof(buf))) > 0)
        for (ssize_t i = 0; i < n; i++)
            sent += buf[i] == '\0';
    CHECK(sent == 20000, "all 20000 messages arrive whole (%d)", sent);
    vl_output_done(&out);
    json_decref(msg);
    json_decref(err);
    close(sv[0]);
    close(sv[1]);
}

int main(void)
{
    test_split_everywhere();
    test_bad_messages();
    test_oversized();
    test_output();
    return CHECK_EXIT();
}
