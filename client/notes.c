/* SPDX-License-Identifier: GPL-2.0-only */
#include "notes.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

/* a kind each: clipped window, hidden processes, idle waits of two windows */
#define NOTES_MAX 8

static struct {
    char key[32];
    char text[256];
} notes[NOTES_MAX];
static size_t n_notes;

void note_set(const char *key, const char *fmt, ...)
{
    size_t i = 0;
    va_list ap;

    while (i < n_notes && strcmp(notes[i].key, key) != 0)
        i++;
    if (i == ARRAY_SIZE(notes))
        return;
    if (i == n_notes) {
        snprintf(notes[i].key, sizeof(notes[i].key), "%s", key);
        n_notes++;
    }
    va_start(ap, fmt);
    vsnprintf(notes[i].text, sizeof(notes[i].text), fmt, ap);
    va_end(ap);
}

void notes_flush(void)
{
    /* after all of stdout, where a terminal shows both */
    fflush(stdout);
    for (size_t i = 0; i < n_notes; i++)
        fprintf(stderr, "offcpuctl: %s\n", notes[i].text);
    n_notes = 0;
}
