/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Names both ends of the socket agree on: where the socket is, the task-state
 * letters, and the fields a Dump can keep stacks apart by. The interface
 * itself is described in daemon/api/io.offcpud.varlink.
 */
#ifndef PROTOCOL_H
#define PROTOCOL_H

#include <stdbool.h>

#define PROTOCOL_SOCKET_PATH "/run/offcpud/offcpud.sock"

/* The socket both programs use unless told otherwise: $OFFCPUD_SOCKET, else
 * PROTOCOL_SOCKET_PATH. */
const char *protocol_socket_path(void);

/* The task state at switch-out, as ps(1) letters (the values of bpf/offcpu.h's
 * enum offcpu_state): S sleeping, D uninterruptible, R preempted, I idle kernel
 * wait, T stopped, t traced, ? other. */
#define PROTOCOL_STATES "SDRITt?"

bool protocol_state_valid(const char *s);

/* Where state is in PROTOCOL_STATES; any other (or none) is the last, '?'. */
unsigned protocol_state_index(char state);

/* Fields a Dump's stacks may be kept apart by ("group_by"). */
enum group_by_field {
    GROUP_BY_PID = 1u << 0,
    GROUP_BY_TID = 1u << 1,
    GROUP_BY_STATE = 1u << 2,
    GROUP_BY_CGROUP = 1u << 3,
};

/* The field named name, or 0 for none. */
unsigned group_by_field(const char *name);
/* The field names, for messages: "pid, tid, state, cgroup". */
const char *group_by_fields_text(void);

#endif
