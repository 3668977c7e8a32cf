/* SPDX-License-Identifier: GPL-2.0-only */
/* A Dump reply as a pprof profile (profile.proto, gzipped), the format of
 * go tool pprof, Pyroscope, Parca and Grafana: sample types off_cpu
 * (nanoseconds) and switches (count); labels pid, tid, comm, state and
 * cgroup; user frames in mappings that carry the file's build-id. */
#ifndef PPROF_H
#define PPROF_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The fields a Dump is grouped by for every label to be set. */
#define PPROF_GROUP_BY "pid,tid,state,cgroup"

/* The reply (asked with frame_detail, grouped by PPROF_GROUP_BY) as an
 * unpacked profile.proto message in *ret (malloc'd, *len bytes).
 * Returns 0 or -errno. */
int pprof_encode(const json_t *reply, uint8_t **ret, size_t *len);

/* ...gzipped onto fd, as pprof files are. Returns 0 or -errno. */
int pprof_write(int fd, const json_t *reply);

#endif
