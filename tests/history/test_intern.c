/* SPDX-License-Identifier: GPL-2.0-only */
/* Interning: equal content shares an id, references free what no one uses,
 * and removal from the open-addressing index never hides other entries. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "intern.h"

static void test_strings(void)
{
    struct intern in;
    uint32_t a, b, c;

    intern_init(&in);
    a = intern_string(&in, "do_nanosleep");
    b = intern_string(&in, "do_nanosleep");
    c = intern_string(&in, "pipe_read");
    CHECK(a && a == b, "equal strings share an id (%u, %u)", a, b);
    CHECK(c && c != a, "different strings differ");
    CHECK(strcmp(intern_string_get(&in, c), "pipe_read") == 0, "string reads back");
    intern_string_unref(&in, a);
    CHECK(strcmp(intern_string_get(&in, a), "do_nanosleep") == 0, "still there after one unref");
    intern_string_unref(&in, b);
    CHECK(in.strings.count == 1, "freed after its last reference (count %u)", in.strings.count);
    CHECK(intern_string(&in, "x") == a, "a freed id is reused");
    intern_done(&in);
}

static void test_stacks(void)
{
    struct intern in;
    uint32_t f[3], s1, s2, n;
    const uint32_t *frames;

    intern_init(&in);
    f[0] = intern_string(&in, "main");
    f[1] = intern_string(&in, "work");
    f[2] = intern_string(&in, "wait");
    s1 = intern_stack(&in, f, 3);
    s2 = intern_stack(&in, f, 3);
    CHECK(s1 && s1 == s2, "equal stacks share an id");
    CHECK(intern_stack(&in, f, 2) != s1, "a prefix is another stack");
    frames = intern_stack_get(&in, s1, &n);
    CHECK(n == 3 && frames[2] == f[2], "stack reads back");
    for (int i = 0; i < 3; i++)
        intern_string_unref(&in, f[i]);
    CHECK(in.strings.count == 3, "stacks keep their frames alive");
    intern_stack_unref(&in, s1);
    intern_stack_unref(&in, s2);
    CHECK(in.strings.count == 2, "dropping a stack drops its frames ('wait' gone, count %u)",
          in.strings.count);
    intern_done(&in);
}

static void test_many(void)
{
    enum { N = 20000 };
    struct intern in;
    static uint32_t ids[N];
    char name[32];
    int lost = 0, wrong = 0;

    intern_init(&in);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "frame_%d", i);
        ids[i] = intern_string(&in, name);
    }
    /* remove every third: backward shifting must keep the rest findable */
    for (int i = 0; i < N; i += 3)
        intern_string_unref(&in, ids[i]);
    for (int i = 0; i < N; i++) {
        uint32_t id;

        if (i % 3 == 0)
            continue;
        snprintf(name, sizeof(name), "frame_%d", i);
        id = intern_string(&in, name);
        lost += id != ids[i];
        wrong += strcmp(intern_string_get(&in, id), name) != 0;
        intern_string_unref(&in, id);
    }
    CHECK(lost == 0 && wrong == 0, "%d strings, a third removed: %d lost, %d wrong", N, lost,
          wrong);
    CHECK(in.strings.count == N - (N + 2) / 3, "count %u", in.strings.count);
    intern_done(&in);
}

int main(void)
{
    test_strings();
    test_stacks();
    test_many();
    return CHECK_EXIT();
}
