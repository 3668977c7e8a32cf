/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * How a key's text is read into its field of struct config (config_key.parse):
 * within the key's min and max; -EINVAL for text that is not a valid value.
 */
#ifndef CONFIG_VALUES_H
#define CONFIG_VALUES_H

#include "config.h"

/* A duration ("250ms", "15m"). */
int config_parse_duration(const struct config_key *k, const char *value, void *field);
/* A size, binary units ("256M", "1GiB", "4096"). */
int config_parse_size(const struct config_key *k, const char *value, void *field);
int config_parse_u32(const struct config_key *k, const char *value, void *field);
/* A power of two, kept as its log2. */
int config_parse_pow2(const struct config_key *k, const char *value, void *field);
/* yes/no, true/false, 1/0. */
int config_parse_bool(const struct config_key *k, const char *value, void *field);
/* One of k->choices, kept as its index. */
int config_parse_choice(const struct config_key *k, const char *value, void *field);
/* Text of min to max bytes. */
int config_parse_string(const struct config_key *k, const char *value, void *field);
int config_parse_path(const struct config_key *k, const char *value, void *field);
/* ADDRESS:PORT, or empty. */
int config_parse_listen(const struct config_key *k, const char *value, void *field);
/* Absolute cgroup paths separated by spaces. */
int config_parse_cgroups(const struct config_key *k, const char *value, void *field);

#endif
