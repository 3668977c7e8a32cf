/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One setting of struct config (config.h), and how its text is read into its
 * field: within the key's min and max; -EINVAL for text that is not a valid
 * value.
 */
#ifndef CONFIG_KEY_H
#define CONFIG_KEY_H

#include <stddef.h>
#include <stdint.h>

/* One setting, as the configuration file, the command line (--NAME, and the
 * short option) and --help know it. */
struct config_key {
    const char *name;
    char short_option; /* 0: none */
    const char *arg;   /* what its value is, for --help: "SIZE", "yes|no" */
    const char *def;   /* the built-in default, as written in the file ("": empty) */
    const char *help;  /* one line for --help */
    int (*parse)(const struct config_key *k, const char *value, void *field);
    size_t offset, size;        /* of its field in struct config */
    uint64_t min, max;          /* for numbers, durations, sizes; for strings the length */
    const char *why;            /* what a valid value is, for the error */
    const char *const *choices; /* for choices: NULL-terminated, stored as their index */
};

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
