/* SPDX-License-Identifier: GPL-2.0-only */
/* Flame trees and their layout: merging equal frames, name order, narrow
 * frames merged, the frame budget, two windows, states; and the SVG's text. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flame_layout.h"
#include "svg_flamegraph.h"

/* A Dump reply of comm "a", user frames "main;F" and kernel "k" per entry:
 * "F=NS[/STATE]" */
static json_t *reply(const char *const *stacks, size_t n)
{
    json_t *a = json_array();

    for (size_t i = 0; i < n; i++) {
        char name[64], state[4] = "";
        long long ns;

        sscanf(stacks[i], "%63[^=]=%lld/%3s", name, &ns, state);
        json_array_append_new(a,
                              json_pack("{s:s, s:[s, s], s:[s], s:I, s:I}", "comm", "a", "user",
                                        "main", name, "kernel", "k", "total_ns", ns, "count", 1));
        if (*state)
            json_object_set_new(json_array_get(a, i), "state", json_string(state));
    }
    return json_pack("{s:o}", "stacks", a);
}

static const struct flame_box *box_named(const struct flame_layout *l, const struct flame_tree *t,
                                         const char *name, unsigned depth)
{
    for (size_t i = 0; i < l->n; i++)
        if (!l->boxes[i].merged && l->boxes[i].depth == depth &&
            strcmp(t->nodes[l->boxes[i].node].name, name) == 0)
            return &l->boxes[i];
    return NULL;
}

static const struct flame_box *merged_box(const struct flame_layout *l)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->boxes[i].merged)
            return &l->boxes[i];
    return NULL;
}

static void check_order_and_merging(void)
{
    /* added out of name order, "c" twice: it merges */
    static const char *const stacks[] = {"b=60", "e=5", "c=20", "d=5", "c=10"};
    json_t *r = reply(stacks, 5);
    struct flame_tree t;
    struct flame_layout l;
    const struct flame_box *b, *c, *m;

    CHECK(flame_tree_init(&t, false) == 0 && flame_tree_add(&t, r, FLAME_NOW) == 0,
          "a tree from a reply");
    CHECK(t.nodes[0].ns[FLAME_NOW] == 100, "the root holds every stack's time");
    CHECK(flame_layout_make(&l, &t, 10, 1000) == 0, "laid out with a 10 ns minimum");
    b = box_named(&l, &t, "b", 3);
    c = box_named(&l, &t, "c", 3);
    m = merged_box(&l);
    CHECK(b && c && b->x == 0 && b->ns[FLAME_NOW] == 60 && c->x == 60 && c->ns[FLAME_NOW] == 30,
          "wide frames in name order, equal frames merged (b at 0, c at 60 with 30)");
    CHECK(!box_named(&l, &t, "d", 3) && !box_named(&l, &t, "e", 3), "narrow frames not drawn");
    CHECK(m && m->merged == 2 && m->x == 90 && m->ns[FLAME_NOW] == 10 && m->depth == 3,
          "but merged into one box after their wider siblings");
    CHECK(box_named(&l, &t, "-", 4) && box_named(&l, &t, "k", 5) && l.max_depth == 5,
          "then the separator and the kernel frames: root, comm, main, f, -, k");
    CHECK(l.boxes[0].node == 0 && l.boxes[0].depth == 0, "the root first");
    flame_layout_done(&l);

    CHECK(flame_layout_make(&l, &t, 11, 1000) == 0 && !merged_box(&l),
          "merged frames narrower than the minimum together are left out too");
    flame_layout_done(&l);

    /* 15 frames: root, a, main, then b, c, d, e with "-" and "k" each */
    CHECK(flame_layout_make(&l, &t, 1, 16) == 0 && l.min_ns == 31 && l.n <= 16 &&
              box_named(&l, &t, "b", 3) && !box_named(&l, &t, "c", 3) && merged_box(&l),
          "a budget of 16 boxes keeps the 8 widest frames apart (minimum %llu ns, %zu boxes)",
          (unsigned long long)l.min_ns, l.n);
    flame_layout_done(&l);
    flame_tree_done(&t);
    json_decref(r);
}

static void check_windows_and_states(void)
{
    static const char *const now[] = {"grew=30/D", "same=10/S", "same=10/R"};
    static const char *const before[] = {"grew=10/D", "same=20/S", "gone=5/S"};
    json_t *r1 = reply(now, 3), *r0 = reply(before, 3);
    struct flame_tree t;
    struct flame_layout l;
    const struct flame_box *grew, *same;

    CHECK(flame_tree_init(&t, true) == 0 && flame_tree_add(&t, r1, FLAME_NOW) == 0 &&
              flame_tree_add(&t, r0, FLAME_BEFORE) == 0,
          "one tree, two windows");
    CHECK(flame_layout_make(&l, &t, 1, 1000) == 0, "laid out");
    grew = box_named(&l, &t, "grew", 3);
    same = box_named(&l, &t, "same", 3);
    CHECK(grew && grew->ns[FLAME_NOW] == 30 && grew->ns[FLAME_BEFORE] == 10,
          "a frame's time in each window");
    CHECK(same && t.state_ns[same->node][0] == 10 && t.state_ns[same->node][2] == 10 &&
              t.state_ns[grew->node][1] == 30,
          "and split by state: S and R for 'same', D for 'grew'");
    CHECK(!box_named(&l, &t, "gone", 3), "a frame only before has no width after");
    flame_layout_done(&l);
    flame_tree_done(&t);
    json_decref(r1);
    json_decref(r0);
}

static void check_diff_widths(void)
{
    static const char *const now[] = {"grew=30", "same=10", "shrank=5"};
    /* the earlier window twice as long: its times count half */
    static const char *const before[] = {"grew=10", "same=20", "shrank=20", "gone=8"};
    json_t *r1 = reply(now, 3), *r0 = reply(before, 4);
    struct flame_tree t;
    struct flame_layout l;
    const struct flame_box *gone, *shrank, *grew, *main_box;

    CHECK(flame_tree_init(&t, false) == 0 && flame_tree_add(&t, r1, FLAME_NOW) == 0 &&
              flame_tree_add(&t, r0, FLAME_BEFORE) == 0,
          "one tree, two windows");
    flame_tree_diff_widths(&t, 0.5);
    CHECK(flame_layout_make(&l, &t, 1, 1000) == 0, "laid out");
    gone = box_named(&l, &t, "gone", 3);
    shrank = box_named(&l, &t, "shrank", 3);
    grew = box_named(&l, &t, "grew", 3);
    main_box = box_named(&l, &t, "main", 2);
    CHECK(gone && gone->width == 4 && gone->ns[FLAME_NOW] == 0 && gone->ns[FLAME_BEFORE] == 8,
          "a vanished frame drawn at its earlier time");
    CHECK(shrank && shrank->width == 10 && shrank->ns[FLAME_NOW] == 5,
          "a shrunk frame at its earlier time, grown at its later");
    CHECK(grew && grew->width == 30, "a grown frame at its later time");
    /* 30 + 10 + 10 + 4: wider than either window's 45 and 29, so the children fit */
    CHECK(main_box && main_box->width == 54 && t.nodes[0].width == 54,
          "a parent as wide as its children, stack by stack");
    CHECK(gone->x + gone->width <= main_box->x + main_box->width, "inside its parent");
    flame_layout_done(&l);
    flame_tree_done(&t);
    json_decref(r1);
    json_decref(r0);
}

static void check_svg_text(void)
{
    /* 20 two-byte characters in 5/106 of 1180 px: room for 6, so 4 and ".." */
    static const char *const stacks[] = {
        "<script>&\"x\"=50", "\x01odd=50",
        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9=5",
        "tiny=1"};
    json_t *r = reply(stacks, 4);
    struct svg_flamegraph o = {
        .title = "t<", .subtitle = "s&", .min_px = 0.1, .max_frames = 100, .max_bytes = 1 << 20};
    struct flame_tree t;
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);

    flame_tree_init(&t, false);
    flame_tree_add(&t, r, FLAME_NOW);
    CHECK(svg_flamegraph_write(f, &t, &o) == 0, "an SVG written");
    fclose(f);
    CHECK(strstr(text, "&lt;script&gt;&amp;&quot;x&quot;") && !strstr(text, "<script>&"),
          "frame names escaped");
    CHECK(strstr(text, "\\x01odd") && !strchr(text, '\x01'), "control characters escaped");
    CHECK(strstr(text, ">t&lt;<") && strstr(text, ">s&amp;<"), "title and subtitle escaped");
    CHECK(strstr(text, "(50.0ns, 47.17%)") || strstr(text, "(0.1us, 47.17%)"),
          "a tooltip with time and share");
    CHECK(strstr(text, ">\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9..</text>"),
          "a label cut to the width, between whole UTF-8 characters");
    flame_tree_done(&t);
    json_decref(r);
    free(text);
}

/* The size of the SVG of 200 stacks with 2000-character names, of times
 * apart, its frames' text limited to max_bytes. */
static size_t long_names_svg(size_t max_bytes)
{
    json_t *stacks = json_array(), *r;
    struct svg_flamegraph o = {.title = "t",
                               .subtitle = "s",
                               .min_px = 0.1,
                               .max_frames = SVG_MAX_FRAMES,
                               .max_bytes = max_bytes};
    struct flame_tree t;
    char name[2001], *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);

    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof(name), "%04d", i);
        memset(name + 4, 'x', sizeof(name) - 5);
        name[sizeof(name) - 1] = '\0';
        json_array_append_new(stacks,
                              json_pack("{s:s, s:[s], s:[], s:i, s:i}", "comm", "a", "user", name,
                                        "kernel", "total_ns", 1000 + 10 * i, "count", 1));
    }
    r = json_pack("{s:o}", "stacks", stacks);
    flame_tree_init(&t, false);
    flame_tree_add(&t, r, FLAME_NOW);
    svg_flamegraph_write(f, &t, &o);
    fclose(f);
    free(text);
    flame_tree_done(&t);
    json_decref(r);
    return size;
}

static void check_size_limit(void)
{
    size_t free_size = long_names_svg(SIZE_MAX), limited = long_names_svg(100000);

    /* the page's own text (style, script) comes on top of the frames' */
    CHECK(free_size > 400000 && limited <= 100000 + 16384 && limited > 25000,
          "long names: %zu bytes unlimited, %zu within a limit of 100000", free_size, limited);
}

int main(void)
{
    check_order_and_merging();
    check_windows_and_states();
    check_diff_widths();
    check_svg_text();
    check_size_limit();
    return CHECK_EXIT();
}
