/* SPDX-License-Identifier: GPL-2.0-only */
#include "protocol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

static const struct {
    const char *name;
    enum group_by_field field;
} group_by_fields[] = {
    {"pid", GROUP_BY_PID},
    {"tid", GROUP_BY_TID},
    {"state", GROUP_BY_STATE},
    {"cgroup", GROUP_BY_CGROUP},
};

const char *group_by_fields_text(void)
{
    static char text[64];

    if (!text[0])
        for (size_t i = 0, len = 0; i < ARRAY_SIZE(group_by_fields); i++)
            len += snprintf(text + len, sizeof(text) - len, "%s%s", i ? ", " : "",
                            group_by_fields[i].name);
    return text;
}

const char *protocol_socket_path(void)
{
    const char *env = getenv("OFFCPUD_SOCKET");

    return env && *env ? env : PROTOCOL_SOCKET_PATH;
}

unsigned protocol_state_index(char state)
{
    const char *p = state ? strchr(PROTOCOL_STATES, state) : NULL;

    return p ? (unsigned)(p - PROTOCOL_STATES) : (unsigned)strlen(PROTOCOL_STATES) - 1;
}

bool protocol_state_valid(const char *s)
{
    return s && strlen(s) == 1 && strchr(PROTOCOL_STATES, s[0]);
}

unsigned group_by_field(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(group_by_fields); i++)
        if (strcmp(group_by_fields[i].name, name) == 0)
            return group_by_fields[i].field;
    return 0;
}
