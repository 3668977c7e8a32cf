/* SPDX-License-Identifier: GPL-2.0-only */
/* Configuration files: values parsed, and errors named by file:line. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "macro.h"
#include "protocol.h"

static int load(struct config *c, const char *text)
{
    char path[] = "/tmp/offcpud-test-config-XXXXXX";
    int fd = mkstemp(path), r;

    if (fd < 0 || write(fd, text, strlen(text)) < 0)
        return -errno;
    close(fd);
    r = config_load_file(c, path);
    unlink(path);
    return r;
}

int main(void)
{
    struct config c;
    const char *why = NULL;

    unsetenv("OFFCPUD_SOCKET");
    config_defaults(&c);
    CHECK(strcmp(c.socket_path, PROTOCOL_SOCKET_PATH) == 0, "default socket");
    CHECK(c.interval_ns == 1000000000ULL && c.retention_ns == 900000000000ULL, "default times");
    CHECK(load(&c, "# comment\n\ninterval = 250ms\nretention=2m # trailing\n"
                   "memory-limit = 64M\nsocket = /tmp/x.sock\nattach = raw_tp\n") == 0,
          "a valid file loads");
    CHECK(c.interval_ns == 250000000ULL && c.retention_ns == 120000000000ULL &&
              c.memory_limit == 64ULL << 20 && strcmp(c.socket_path, "/tmp/x.sock") == 0 &&
              c.collector.attach == COLLECTOR_ATTACH_RAW_TP,
          "values taken");
    CHECK(load(&c, "interval = 1s\nbogus = 1\n") == -EINVAL, "unknown key refused");
    CHECK(load(&c, "interval = fast\n") == -EINVAL, "bad duration refused");
    CHECK(load(&c, "interval 1s\n") == -EINVAL, "line without '=' refused");
    CHECK(config_set(&c, "interval", "1ms", &why) == -EINVAL && why, "interval below 10ms: %s",
          why);
    CHECK(config_set(&c, "memory-limit", "12X", &why) == -EINVAL, "bad size refused");
    CHECK(config_set(&c, "socket", "relative.sock", &why) == -EINVAL, "relative socket refused");
    CHECK(c.request_timeout_ns == 5 * NSEC_PER_SEC && c.max_clients_per_address == 16,
          "listener defaults: request-timeout 5s, max-clients-per-address 16");
    CHECK(load(&c, "request-timeout = 2s\nmax-clients-per-address = 4\n") == 0 &&
              c.request_timeout_ns == 2 * NSEC_PER_SEC && c.max_clients_per_address == 4,
          "listener limits taken");
    CHECK(config_set(&c, "request-timeout", "10ms", &why) == -EINVAL && why,
          "request-timeout below 100ms: %s", why);
    /* config_defaults takes every default through its key's parser */
    for (size_t i = 0; i < config_keys_n; i++) {
        struct config scratch = {0};

        CHECK(config_set(&scratch, config_keys[i].name, config_keys[i].def, &why) == 0,
              "default of %s parses: '%s'", config_keys[i].name, config_keys[i].def);
    }
    setenv("OFFCPUD_SOCKET", "/tmp/env.sock", 1);
    config_defaults(&c);
    CHECK(strcmp(c.socket_path, "/tmp/env.sock") == 0, "OFFCPUD_SOCKET sets the default");
    return CHECK_EXIT();
}
