/* SPDX-License-Identifier: GPL-2.0-only */
/* --min-wait's rule on one record: the bucket holding the threshold, the
 * time kept of a stack with waits on both sides, and a wait still going on. */
#include "check.h"
#include "histogram.h"
#include "intern.h"
#include "min_wait.h"

#define MS 1000000ULL

/* bucket b holds [2^(b-1), 2^b) us: 100 ms in 17, 1 s in 20, 1.5 s in 21 */
static struct record record_of(struct histogram *h, const unsigned *buckets, size_t n,
                               uint64_t total_ns, uint64_t max_ns)
{
    *h = (struct histogram){{0}};
    for (size_t i = 0; i < n; i++)
        h->n[buckets[i]]++;
    return (struct record){.total_ns = total_ns, .count = n, .max_ns = max_ns, .hist = 1};
}

int main(void)
{
    struct histogram h;
    struct record rec;
    struct waits w;

    /* 1.5 s and 100 ms from one stack: the 1.5 s kept, the 100 ms at its
     * bucket's middle (98.304 ms) taken off */
    rec = record_of(&h, (const unsigned[]){21, 17}, 2, 1600 * MS, 1500 * MS);
    CHECK(min_wait_of(&rec, &h, 1000 * MS, false, &w) && w.count == 1, "1.5 s kept");
    CHECK(w.total_ns == 1600 * MS - 98304000, "time kept %llu", (unsigned long long)w.total_ns);

    /* 700 ms and 900 ms: both in 1 s's bucket, the longest short of 1 s: none kept */
    rec = record_of(&h, (const unsigned[]){20, 20}, 2, 1600 * MS, 900 * MS);
    CHECK(!min_wait_of(&rec, &h, 1000 * MS, false, &w), "a stack of shorter waits left out");
    /* 700 ms and 1.04 s, the same bucket: the longest reaches 1 s, both kept */
    rec = record_of(&h, (const unsigned[]){20, 20}, 2, 1740 * MS, 1040 * MS);
    CHECK(min_wait_of(&rec, &h, 1000 * MS, false, &w) && w.count == 2 && w.total_ns == 1740 * MS,
          "the bucket holding 1 s kept whole");

    /* only 100 ms waits ended, but the time after them is of a wait that
     * ends long in a later record: that time is kept, no wait counted */
    rec = record_of(&h, (const unsigned[]){17}, 1, 600 * MS, 100 * MS);
    CHECK(!min_wait_of(&rec, &h, 1000 * MS, false, &w), "short only: left out");
    CHECK(min_wait_of(&rec, &h, 1000 * MS, true, &w) && w.count == 0 &&
              w.total_ns == 600 * MS - 98304000,
          "its long tail kept");

    /* a 100 ms wait split across two records (60 ms, then 40 ms with the
     * start of a 1.5 s wait, 140 ms in all), the long one ending in a third
     * (1.4 s): the first part left out, and the second record takes off
     * the short wait's middle less that part (98.304 - 60 ms), not all of it:
     * the long wait kept, with the middle's error (1.696 ms too much) */
    {
        struct intern in;
        struct histogram h17 = {{0}}, h21 = {{0}};
        struct record recs[3];
        struct min_wait_item items[3];

        intern_init(&in);
        h17.n[17] = 1;
        h21.n[21] = 1;
        recs[0] = (struct record){.tid = 7, .total_ns = 60 * MS};
        recs[1] = (struct record){.tid = 7,
                                  .total_ns = 140 * MS,
                                  .count = 1,
                                  .max_ns = 100 * MS,
                                  .hist = histogram_intern(&in, &h17)};
        recs[2] = (struct record){.tid = 7,
                                  .total_ns = 1400 * MS,
                                  .count = 1,
                                  .max_ns = 1500 * MS,
                                  .hist = histogram_intern(&in, &h21)};
        for (size_t i = 0; i < 3; i++)
            items[i] = (struct min_wait_item){.rec = &recs[i], .snapshot = i};
        min_wait_decide(items, 3, &in, 1000 * MS);
        CHECK(!items[0].kept && items[1].kept && items[2].kept,
              "the short wait's first part left out");
        CHECK(items[1].w.total_ns == 140 * MS - (98304000 - 60 * MS) &&
                  items[1].w.total_ns + items[2].w.total_ns == 1500 * MS + 1696000,
              "the long wait kept within the middle's error: %llu",
              (unsigned long long)items[1].w.total_ns);
        intern_done(&in);
    }

    /* threshold 0: everything, untouched */
    CHECK(min_wait_of(&rec, &h, 0, false, &w) && w.total_ns == 600 * MS && w.count == 1, "all");
    min_wait_histogram(&h, 1000 * MS);
    CHECK(h.n[17] == 0, "the histogram keeps buckets from 1 s's on");
    return CHECK_EXIT();
}
