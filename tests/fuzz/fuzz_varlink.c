/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The bytes a client sends, through the daemon's own Varlink framing, JSON
 * parsing, method table, parameter checks and methods, over a ring of real
 * snapshots. The first byte picks the size of the chunks the rest arrives in
 * (a stream is read in whatever pieces the kernel hands over); the second,
 * the caller: root, a member of the socket's group, or a stranger. The
 * daemon has no collector (no BPF, no drain) and no socket of its own.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "daemon.h"
#include "stacks.h"
#include "varlink_frame.h"
#include "varlink_server.h"

#define SEC 1000000000LL

static struct daemon d;

/* Ten seconds of two processes of two users, ending now. */
static void fill_ring(void)
{
    int64_t now = clock_ns(CLOCK_REALTIME);

    for (int s = 0; s < 10; s++) {
        struct snapshot *snap = calloc(1, sizeof(*snap) + 2 * sizeof(struct record));

        snap->start_ns = now - (10 - s) * SEC;
        snap->end_ns = snap->start_ns + SEC;
        snap->n = 2;
        for (uint32_t i = 0; i < 2; i++)
            snap->records[i] = (struct record){
                .total_ns = 1000000ULL * (s + 1),
                .count = 1,
                .tgid = 100 + i,
                .tid = 100 + i,
                .uid = i ? 1000 : 0,
                .comm = intern_string(&d.ring.intern, i ? "app" : "db"),
                .cgroup = intern_string(&d.ring.intern, "/svc"),
                .ustack = stack_of(&d.ring.intern, "main", i ? "wait_app" : "wait_db"),
                .kstack = stack_of(&d.ring.intern, "do_syscall_64", "schedule"),
                .state = i ? 'S' : 'D',
            };
        ring_push(&d.ring, snap, now);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    config_defaults(&d.cfg);
    d.access = (struct access_policy){.gid = 4242};
    d.limits = (struct vl_server_limits){.request_limit = 4096, .output_limit = 1 << 20};
    if (vl_server_new(-1, -1, &d.limits, &d.access, &d.server) < 0 || api_bind(d.server, &d) < 0)
        abort();
    ring_init(&d.ring, 3600 * SEC, 64 << 20);
    fill_ring();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct peer peers[] = {
        {.pid = 1, .uid = 0, .gid = 0},
        {.pid = 2, .uid = 1000, .gid = 4242},
        {.pid = 3, .uid = 1001, .gid = 1001},
    };
    struct vl_input in;
    struct vl_output out;
    size_t chunk;
    int sv[2];

    if (size < 2)
        return 0;
    chunk = 1 + data[0] % 64;
    const struct peer *peer = &peers[data[1] % 3];
    data += 2;
    size -= 2;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
        abort();
    vl_input_init(&in, 4096);
    vl_output_init(&out, 1 << 20);
    for (size_t off = 0; off < size;) {
        size_t n = size - off < chunk ? size - off : chunk;
        json_t *msg = NULL;
        char reason[256];
        ssize_t r;
        int got;

        if (write(sv[1], data + off, n) != (ssize_t)n)
            abort();
        off += n;
        r = vl_input_read(&in, sv[0]);
        if (r == -EMSGSIZE)
            break; /* the daemon answers RequestTooLarge and drops the rest */
        while ((got = vl_input_next(&in, &msg, reason, sizeof(reason))) != 0) {
            bool oneway = false;
            json_t *reply = got < 0 ? NULL : vl_server_call(d.server, peer, msg, &oneway);

            if (reply && vl_output_append(&out, reply) == -ENOBUFS)
                out.start = out.len = 0;
            json_decref(reply);
            json_decref(msg);
            msg = NULL;
        }
    }
    vl_input_done(&in);
    vl_output_done(&out);
    close(sv[0]);
    close(sv[1]);
    return 0;
}
