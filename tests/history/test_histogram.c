/* SPDX-License-Identifier: GPL-2.0-only */
/* Histograms of periods as records keep them: text that reads back as it
 * was made, equal histograms stored once, merging records sums them, and no
 * other text is taken for one (a state file is checked before it is read). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "histogram.h"
#include "snapshot.h"

static void test_text(void)
{
    struct histogram h = {{0}}, back = {{0}};
    struct intern in;
    uint32_t id, again;

    intern_init(&in);
    CHECK(histogram_intern(&in, &h) == 0, "an empty histogram is no string");
    h.n[0] = 3;
    h.n[14] = 100;
    h.n[HISTOGRAM_BUCKETS - 1] = 1;
    id = histogram_intern(&in, &h);
    CHECK(id && strcmp(intern_string_get(&in, id), "0:3 14:100 23:1") == 0, "as text: %s",
          id ? intern_string_get(&in, id) : "(none)");
    histogram_add_text(&back, intern_string_get(&in, id));
    CHECK(memcmp(&back, &h, sizeof(h)) == 0, "which reads back");
    again = histogram_intern(&in, &back);
    CHECK(again == id && in.strings.count == 1, "an equal histogram is the same string");
    intern_string_unref(&in, again);
    intern_string_unref(&in, id);
    intern_done(&in);
}

static void test_validity(void)
{
    static const char *const bad[] = {"",     "14",      "14:",     ":3",       "14:0",
                                      "24:1", "3:1 2:1", "3:1 3:1", "3:1  4:1", "3:1 ",
                                      "a:1",  "3:x",     "-1:2"};

    CHECK(histogram_text_valid("0:1 13:5 23:18446744073709551615"), "a histogram's text is valid");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(!histogram_text_valid(bad[i]), "'%s' is not a histogram", bad[i]);
}

static void test_merge(void)
{
    struct histogram a = {{0}}, b = {{0}}, sum = {{0}};
    struct record into, from;
    struct intern in;

    intern_init(&in);
    a.n[14] = 10;
    b.n[14] = 5;
    b.n[20] = 1;
    into = (struct record){
        .total_ns = 100, .count = 10, .max_ns = 11, .hist = histogram_intern(&in, &a)};
    from = (struct record){
        .total_ns = 60, .runq_ns = 7, .count = 6, .max_ns = 40, .hist = histogram_intern(&in, &b)};
    record_add_sums(&in, &into, &from);
    histogram_add_text(&sum, intern_string_get(&in, into.hist));
    CHECK(into.total_ns == 160 && into.runq_ns == 7 && into.count == 16 && into.max_ns == 40,
          "sums added, the longest period kept");
    CHECK(sum.n[14] == 15 && sum.n[20] == 1, "histograms added: %s",
          intern_string_get(&in, into.hist));
    intern_string_unref(&in, into.hist);
    intern_string_unref(&in, from.hist);
    CHECK(in.strings.count == 0, "no reference left behind");
    intern_done(&in);
}

int main(void)
{
    test_text();
    test_validity();
    test_merge();
    return CHECK_EXIT();
}
