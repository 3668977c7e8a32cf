/* SPDX-License-Identifier: GPL-2.0-only */
#include "command_line.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "log.h"
#include "protocol.h"

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: offcpud [OPTIONS]\n"
            "Always-on off-CPU profiler: sums blocked time per stack in the kernel and\n"
            "answers queries from offcpuctl on a Varlink socket.\n\n"
            "  -c, --config FILE          read settings from FILE (command line wins)\n"
            "  -s, --socket PATH          listen on PATH (default %s, or $OFFCPUD_SOCKET)\n"
            "  -i, --interval DURATION    snapshot interval (default 1s)\n"
            "  -r, --retention DURATION   keep snapshots this long (default 15m)\n"
            "  -m, --memory-limit SIZE    memory for snapshots (default 256M)\n"
            "      --attach MODE          auto, tp_btf or raw_tp (default auto)\n"
            "      --state-directory DIR  keep the ring here across restarts\n"
            "                             (default $STATE_DIRECTORY or /var/lib/offcpud)\n"
            "      --journal-size SIZE    compact the journal of snapshots at this size\n"
            "                             (default 64M)\n"
            "      --journal-sync yes|no  flush each snapshot to disk (default no)\n"
            "      --stack-cache yes|no   reuse stacks of a thread blocking at the same\n"
            "                             place again (default yes)\n"
            "      --wakers yes|no        walk the waker's stacks at each wakeup, for\n"
            "                             offcpuctl wakers (default no)\n"
            "      --socket-group NAME    whose members may connect and read (default offcpu)\n"
            "      --group-access own|all what the socket's group may see (default own)\n"
            "      --trace-cgroups 'PATH...' trace only these cgroups and their subtrees\n"
            "      --metrics-listen ADDRESS:PORT  serve Prometheus metrics (default off)\n"
            "  -h, --help                 show this help\n"
            "  -V, --version              show the version\n",
            PROTOCOL_SOCKET_PATH);
}

static const struct option long_options[] = {
    {"config", required_argument, NULL, 'c'},
    {"socket", required_argument, NULL, 's'},
    {"interval", required_argument, NULL, 'i'},
    {"retention", required_argument, NULL, 'r'},
    {"memory-limit", required_argument, NULL, 'm'},
    {"attach", required_argument, NULL, 'a'},
    {"state-directory", required_argument, NULL, 'd'},
    {"stack-cache", required_argument, NULL, 0x100},
    {"group-access", required_argument, NULL, 0x101},
    {"socket-group", required_argument, NULL, 0x102},
    {"trace-cgroups", required_argument, NULL, 0x103},
    {"metrics-listen", required_argument, NULL, 0x104},
    {"journal-size", required_argument, NULL, 0x105},
    {"journal-sync", required_argument, NULL, 0x106},
    {"wakers", required_argument, NULL, 0x107},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

int command_line_parse(int argc, char **argv, struct config *cfg)
{
    const char *config_file = NULL;
    int c, idx;

    /* the file first, so that the command line overrides it; optind = 0 makes
     * getopt start afresh, as a reload parses the same arguments again */
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "c:s:i:r:m:hV", long_options, NULL)) != -1)
        if (c == 'c')
            config_file = optarg;
    if (config_file && config_load_file(cfg, config_file) < 0)
        return -EINVAL;

    optind = 0;
    opterr = 1;
    while ((c = getopt_long(argc, argv, "c:s:i:r:m:hV", long_options, &idx)) != -1) {
        const char *why = "invalid value";
        const char *key = NULL;

        switch (c) {
        case 'h':
            usage(stdout);
            return 1;
        case 'V':
            printf("offcpud %s\n", OFFCPUD_VERSION);
            return 1;
        case 'c':
            continue;
        case '?':
            usage(stderr);
            return -EINVAL;
        default:
            for (idx = 0; long_options[idx].name; idx++)
                if (long_options[idx].val == c)
                    key = long_options[idx].name;
            if (config_set(cfg, key, optarg, &why) < 0) {
                log_error("--%s %s: %s", key, optarg, why);
                return -EINVAL;
            }
        }
    }
    if (optind < argc) {
        log_error("unexpected argument '%s'", argv[optind]);
        return -EINVAL;
    }
    return 0;
}
