/* SPDX-License-Identifier: GPL-2.0-only */
#include "stack_label.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "name_escape.h"

#define CUT_MARK        " ..."
#define DEFAULT_COLUMNS 200
#define MIN_WIDTH       40

/* frames (root first) from the leaf: "leaf < ... < root" */
static void put_leaf_first(FILE *f, const json_t *frames)
{
    for (size_t i = json_array_size(frames); i-- > 0;) {
        name_escape_put(f, json_string_value(json_array_get(frames, i)) ?: "?",
                        NAME_ESCAPE_CONTROL);
        if (i)
            fputs(STACK_LABEL_CALLER, f);
    }
}

char *stack_label(const json_t *stack)
{
    const json_t *user = json_object_get(stack, "user"), *kernel = json_object_get(stack, "kernel");
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);

    if (!f)
        return NULL;
    if (json_array_size(user)) {
        put_leaf_first(f, user);
        if (json_array_size(kernel)) {
            fputs(" [kernel: ", f);
            put_leaf_first(f, kernel);
            fputc(']', f);
        }
    } else {
        put_leaf_first(f, kernel);
    }
    fputs(" (", f);
    name_escape_put(f, json_string_value(json_object_get(stack, "comm")) ?: "?",
                    NAME_ESCAPE_CONTROL);
    fputc(')', f);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

void stack_label_put(FILE *f, const char *label, size_t width)
{
    const char *first = strstr(label, STACK_LABEL_CALLER);
    size_t keep;

    if (strlen(label) <= width || !first) {
        fputs(label, f);
        return;
    }
    keep = (size_t)(first - label);
    /* whole frames while they and the mark fit */
    for (const char *p = first; p && (size_t)(p - label) + strlen(CUT_MARK) <= width;
         p = strstr(p + 1, STACK_LABEL_CALLER))
        keep = (size_t)(p - label);
    fprintf(f, "%.*s%s", (int)keep, label, CUT_MARK);
}

size_t stack_label_width(size_t used)
{
    struct winsize ws;
    const char *env = getenv("COLUMNS");
    size_t columns = DEFAULT_COLUMNS;

    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col)
        columns = ws.ws_col;
    else if (env && atoi(env) > 0)
        columns = (size_t)atoi(env);
    return columns > used + MIN_WIDTH ? columns - used : MIN_WIDTH;
}
