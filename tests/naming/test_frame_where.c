/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where a user frame lies, in the form the ring keeps (and rings saved on
 * disk by earlier daemons hold): "0xOFFSET" and "BUILD_ID PATH", "-" for an
 * unknown build-id, both "" outside files. Read back as written; anything
 * else is not a place.
 */
#include <string.h>

#include "check.h"
#include "frame_where.h"

static char offset[FRAME_WHERE_TEXT_MAX], file[FRAME_WHERE_TEXT_MAX];

static void test_round_trip(void)
{
    static const uint8_t id[] = {0x4e, 0x9a, 0x00, 0xff, 0x12};
    struct frame_where w, back;

    frame_where_set(&w, "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x1a2b, id, sizeof(id));
    frame_where_format(&w, offset, file);
    CHECK(strcmp(offset, "0x1a2b") == 0, "offset as the ring keeps it: %s", offset);
    CHECK(strcmp(file, "4e9a00ff12 /usr/lib/x86_64-linux-gnu/libc.so.6") == 0,
          "file as the ring keeps it: %s", file);
    CHECK(frame_where_parse(offset, file, &back) == 0 && back.in_file && back.offset == 0x1a2b &&
              strcmp(back.build_id, "4e9a00ff12") == 0 &&
              strcmp(back.module, "/usr/lib/x86_64-linux-gnu/libc.so.6") == 0,
          "read back: 0x%lx %s %s", (unsigned long)back.offset, back.build_id, back.module);

    /* a path may hold spaces: the build-id ends at the first */
    frame_where_set(&w, "/opt/my app/bin", 0, NULL, 0);
    frame_where_format(&w, offset, file);
    CHECK(strcmp(offset, "0x0") == 0 && strcmp(file, "- /opt/my app/bin") == 0,
          "no build-id: %s %s", offset, file);
    CHECK(frame_where_parse(offset, file, &back) == 0 && back.build_id[0] == '\0' &&
              strcmp(back.module, "/opt/my app/bin") == 0,
          "read back without build-id: [%s] %s", back.build_id, back.module);
}

/* A Python function's frame: a line of its source file. */
static void test_source_line(void)
{
    struct frame_where w, back;

    frame_where_set_source(&w, "/usr/lib/python3.11/threading.py", 975);
    frame_where_format(&w, offset, file);
    CHECK(strcmp(offset, "line 975") == 0 &&
              strcmp(file, "- /usr/lib/python3.11/threading.py") == 0,
          "a source line as the ring keeps it: %s %s", offset, file);
    CHECK(frame_where_parse(offset, file, &back) == 0 && back.in_file && back.line == 975 &&
              back.build_id[0] == '\0' &&
              strcmp(back.module, "/usr/lib/python3.11/threading.py") == 0,
          "read back: line %u of %s", back.line, back.module);
    CHECK(frame_where_parse("line 0", file, &back) < 0, "no line 0");
    CHECK(frame_where_parse("line 9x", file, &back) < 0, "line with trailing junk");
}

static void test_nowhere(void)
{
    struct frame_where w = {0}, back;

    frame_where_format(&w, offset, file);
    CHECK(offset[0] == '\0' && file[0] == '\0', "outside files: both empty");
    CHECK(frame_where_parse(offset, file, &back) < 0 && !back.in_file, "empty is no place");
}

static void test_not_places(void)
{
    struct frame_where back;

    CHECK(frame_where_parse("0x10", NULL, &back) < 0, "file not known");
    CHECK(frame_where_parse(NULL, "- /bin/true", &back) < 0, "offset not known");
    CHECK(frame_where_parse("0x10", "/bin/true", &back) < 0, "file without build-id field");
    CHECK(frame_where_parse("0x10z", "- /bin/true", &back) < 0, "offset with trailing junk");
    CHECK(frame_where_parse("16", "- /bin/true", &back) < 0, "offset not in hex form");
}

int main(void)
{
    test_round_trip();
    test_source_line();
    test_nowhere();
    test_not_places();
    return CHECK_EXIT();
}
