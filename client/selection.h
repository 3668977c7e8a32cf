/* SPDX-License-Identifier: GPL-2.0-only */
/* The options that say which off-CPU time a command is about: whose
 * (--pid, --tid, --cgroup, --unit, --comm, --state) and when (--since, --until).
 * Every query command takes the same ones and sends them in the same
 * request parameters. */
#ifndef SELECTION_H
#define SELECTION_H

#include <getopt.h>
#include <jansson.h>
#include <stddef.h>

/* getopt_long entries; a command lists them first in its option table. */
#define SELECTION_OPTIONS                                                                          \
    {"pid", required_argument, NULL, 'p'}, {"tid", required_argument, NULL, 't'},                  \
        {"cgroup", required_argument, NULL, 'c'}, {"unit", required_argument, NULL, 'u'},          \
        {"comm", required_argument, NULL, 'n'}, {"state", required_argument, NULL, 's'},           \
        {"since", required_argument, NULL, 'S'}, {"until", required_argument, NULL, 'U'},          \
        {"min-wait", required_argument, NULL, 'W'},                                                \
    {                                                                                              \
        "no-idle", no_argument, NULL, 'I'                                                          \
    }

/* Their lines of a command's --help. */
#define SELECTION_HELP                                                                             \
    "  --pid PID              a process, all its threads\n"                                        \
    "  --tid TID              one thread\n"                                                        \
    "  --cgroup PATH          a cgroup v2 and those below it\n"                                    \
    "  --unit NAME            a systemd unit's cgroups, across restarts (.service if no suffix)\n" \
    "  --comm NAME            threads of that name\n"                                              \
    "  --state S|D|R|I|T|t    task state when it blocked (see offcpuctl --help)\n"                 \
    "  --since DURATION|@T    start: back from now (60s, 5m) or a Unix time\n"                     \
    "  --until DURATION|@T    end: back from now or a Unix time (default now)\n"                   \
    "  --min-wait DURATION    only waits at least that long (see offcpuctl(1) for the edges)\n"    \
    "  --no-idle              leave out idle waits: poll, epoll, select, sleeps, condition\n"      \
    "                         variables (see offcpuctl(1) for the rule)\n"

/* Handles getopt_long's c if it is a selection option, putting it into
 * params: returns EXIT_OK, or EXIT_USAGE after the one-line message; returns
 * -ENOENT if c is not a selection option. */
int selection_option(int c, const char *arg, json_t *params);

/* " for pid 42 for state D", or " at all": what an empty answer was about. */
void selection_describe(const json_t *params, char *buf, size_t size);

/* A title: what ("Off-CPU time") of whom: " for pid 42 for state D", or
 * " of every task". */
void selection_title(const json_t *params, const char *what, char *buf, size_t size);

/* The one-line error of an empty answer: "no off-CPU data for pid 42 in
 * that window" (where: "that window"). Returns EXIT_ERROR. */
int selection_no_data(const json_t *params, const char *where);

/* --min-total DURATION into params' min_total_ns; a usage error for what
 * is not a duration. */
int selection_min_total(const char *arg, json_t *params);

/* --group-by FIELDS (pid,tid,state,cgroup) into params' group_by; a usage
 * error for another field. */
int selection_group_by(const char *arg, json_t *params);

#endif
