/* SPDX-License-Identifier: GPL-2.0-only */
/* Durations as people write them: "500ms", "60s", "5m", "1h", "1h30m". */
#ifndef DURATION_H
#define DURATION_H

#include <stddef.h>
#include <stdint.h>

/* Parse a duration into nanoseconds. Units: ns, us, ms, s, m (min), h, d;
 * several may follow each other ("1m30s"); a bare number is refused.
 * Returns 0, -EINVAL (malformed) or -ERANGE (overflow). */
int duration_parse(const char *s, uint64_t *ret_ns);

/* Format ns in the largest unit that keeps it exact ("1500ms", "2m"). */
const char *duration_format(uint64_t ns, char *buf, size_t size);

#endif
