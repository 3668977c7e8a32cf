/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One address, several frames (frame_names.h): Go's inlined calls written
 * before the function that holds them, split back innermost first; past the
 * buffer or the count, the frame the address lies in is kept whole.
 */
#include <string.h>

#include "check.h"
#include "frame_names.h"

int main(void)
{
    char buf[64];
    const char *names[FRAME_NAMES_MAX];
    size_t n;

    frame_name_inlined(buf, sizeof(buf), "main.inner\nmain.middle", "main.loop");
    n = frame_names_split(buf, names, FRAME_NAMES_MAX);
    CHECK(n == 3 && strcmp(names[0], "main.inner") == 0 && strcmp(names[1], "main.middle") == 0 &&
              strcmp(names[2], "main.loop") == 0,
          "inlined calls, innermost first, then their holder (%zu)", n);

    frame_name_inlined(buf, 16, "main.inner\nmain.middle", "main.loop");
    n = frame_names_split(buf, names, FRAME_NAMES_MAX);
    CHECK(n == 1 && strcmp(names[0], "main.loop") == 0,
          "over the buffer: the holder alone, never cut (%zu, %s)", n, names[0]);

    frame_name_symbol(buf, sizeof(buf), "main.loop");
    n = frame_names_split(buf, names, FRAME_NAMES_MAX);
    CHECK(n == 1 && strcmp(names[0], "main.loop") == 0, "one frame: itself");

    strcpy(buf, "a\nb\nc\nd");
    n = frame_names_split(buf, names, 2);
    CHECK(n == 2 && strcmp(names[0], "c") == 0 && strcmp(names[1], "d") == 0,
          "past the count: the outermost kept (%zu)", n);
    return CHECK_EXIT();
}
