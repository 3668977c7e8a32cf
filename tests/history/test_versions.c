/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Every version of the state files reads. Run-queue time (runq_ns), the
 * longest period and the histogram of periods written by this version read
 * back from the ring file and the journal; the files of a daemon from before
 * them, real ones, restore with their totals, runq 0, no histograms and no
 * wakers' pairs (which this version writes and reads back too):
 * a ring file of version 4 that daemon saved (data/ring-v4, its first
 * argument) and a journal of version 1 (the fuzz corpus's file-4-records,
 * behind its one byte of fuzzer mode: the second argument).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "histogram.h"
#include "journal.h"
#include "macro.h"
#include "persist.h"
#include "stacks.h"

#define SEC 1000000000LL

static struct snapshot *snapshot_with_runq(struct intern *in)
{
    struct snapshot *s = calloc(1, sizeof(*s) + sizeof(struct record));
    struct histogram h = {{0}};

    h.n[14] = 1;

    *s = (struct snapshot){.start_ns = 100 * SEC, .end_ns = 101 * SEC, .n = 1};
    s->records[0] = (struct record){.total_ns = 10000000,
                                    .runq_ns = 3000000,
                                    .count = 1,
                                    .tgid = 42,
                                    .tid = 42,
                                    .uid = 1000,
                                    .comm = intern_string(in, "app"),
                                    .ustack = stack_of(in, "main", "sleep"),
                                    .kstack = stack_of(in, "do_syscall_64", "schedule"),
                                    .max_ns = 10000000,
                                    .hist = histogram_intern(in, &h),
                                    .state = 'S'};
    return s;
}

/* Its woken task, and an interrupt that woke it (the waker's state is its
 * kind; no user stack). */
static void add_wake(struct intern *in, struct snapshot *s)
{
    s->wakes = calloc(1, sizeof(*s->wakes));
    s->nwakes = 1;
    s->wakes[0].woken = (struct record){.total_ns = 7000000,
                                        .count = 2,
                                        .tgid = 42,
                                        .tid = 42,
                                        .uid = 1000,
                                        .comm = intern_string(in, "app"),
                                        .ustack = stack_of(in, "main", "sleep"),
                                        .kstack = stack_of(in, "do_syscall_64", "schedule"),
                                        .state = 'S'};
    s->wakes[0].waker =
        (struct record){.comm = intern_string(in, "[hardirq]"),
                        .kstack = stack_of(in, "asm_sysvec_apic_timer_interrupt", "hrtimer_wakeup"),
                        .state = OFFCPU_WAKER_HARDIRQ};
}

/* The wake pair of r, as add_wake made it? */
static bool wake_as_made(const struct ring *r)
{
    const struct wake_record *w = r->n == 1 && r->snaps[0]->nwakes == 1 ? r->snaps[0]->wakes : NULL;
    uint32_t n;
    const uint32_t *frames = w ? intern_stack_get(&r->intern, w->waker.kstack, &n) : NULL;

    return w && w->woken.total_ns == 7000000 && w->woken.count == 2 && w->woken.tid == 42 &&
           w->waker.state == OFFCPU_WAKER_HARDIRQ && !w->waker.ustack && !w->waker.tgid &&
           strcmp(intern_string_get(&r->intern, w->waker.comm), "[hardirq]") == 0 && n == 2 &&
           strcmp(intern_string_get(&r->intern, frames[1]), "hrtimer_wakeup") == 0;
}

/* The one record of r, as snapshot_with_runq made it? */
static bool as_made(const struct ring *r)
{
    const struct record *rec = r->n == 1 && r->snaps[0]->n == 1 ? &r->snaps[0]->records[0] : NULL;

    return rec && rec->total_ns == 10000000 && rec->runq_ns == 3000000 && rec->max_ns == 10000000 &&
           rec->hist && strcmp(intern_string_get(&r->intern, rec->hist), "14:1") == 0;
}

/* The sums of r's records. */
static void sums(const struct ring *r, uint64_t *total, uint64_t *runq)
{
    *total = *runq = 0;
    for (size_t i = 0; i < r->n; i++)
        for (uint32_t j = 0; j < r->snaps[i]->n; j++) {
            *total += r->snaps[i]->records[j].total_ns;
            *runq += r->snaps[i]->records[j].runq_ns;
        }
}

static bool no_histograms(const struct ring *r)
{
    for (size_t i = 0; i < r->n; i++)
        for (uint32_t j = 0; j < r->snaps[i]->n; j++)
            if (r->snaps[i]->records[j].hist || r->snaps[i]->records[j].max_ns)
                return false;
    return true;
}

static void test_ring_file_round_trip(void)
{
    _cleanup_free_ char *buf = NULL;
    struct ring r, back;
    uint64_t generation;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    ring_init(&r, 3600 * SEC, 64 << 20);
    ring_push(&r, snapshot_with_runq(&r.intern), 101 * SEC);
    add_wake(&r.intern, r.snaps[0]);
    CHECK(ring_save(&r, NULL, 1, f) == 0, "ring file written");
    fclose(f);
    ring_init(&back, 3600 * SEC, 64 << 20);
    CHECK(ring_load(&back, NULL, (unsigned char *)buf, len, &generation) == 0, "and read");
    CHECK(as_made(&back), "runq_ns, max_ns and hist in the ring file");
    CHECK(wake_as_made(&back), "a wakers' pair in the ring file");
    ring_done(&back);
    ring_done(&r);
}

static void test_journal_round_trip(void)
{
    unsigned char header[JOURNAL_HEADER_SIZE], *file;
    struct journal_writer w = {0};
    struct journal_replay out;
    struct intern in;
    struct snapshot *s;
    struct ring r;
    char *rec;
    size_t len;

    intern_init(&in);
    journal_writer_init(&w, 2, header);
    s = snapshot_with_runq(&in);
    add_wake(&in, s);
    CHECK(journal_encode(&w, &in, s, &rec, &len) == 0, "journal record made");
    file = malloc(sizeof(header) + len);
    memcpy(file, header, sizeof(header));
    memcpy(file + sizeof(header), rec, len);
    ring_init(&r, 3600 * SEC, 64 << 20);
    CHECK(journal_replay(&r, NULL, file, sizeof(header) + len, 1, &out) == 0 && out.records == 1,
          "and replayed");
    CHECK(as_made(&r), "runq_ns, max_ns and hist in the journal");
    CHECK(wake_as_made(&r), "a wakers' pair in the journal");
    ring_done(&r);
    free(file);
    free(rec);
    snapshot_free(&in, s);
    journal_writer_done(&w);
    intern_done(&in);
}

static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long size;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc(size)) && fread(buf, 1, size, f) != (size_t)size) {
        free(buf);
        buf = NULL;
    }
    *len = buf ? (size_t)size : 0;
    fclose(f);
    return buf;
}

static void test_older_files(const char *ring_v4, const char *journal_v1)
{
    size_t len;
    _cleanup_free_ unsigned char *ring_file = read_file(ring_v4, &len);
    uint64_t total, runq, generation;
    struct journal_replay out;
    struct ring r;

    ring_init(&r, 3600 * SEC * 24 * 365 * 100, 64 << 20);
    CHECK(ring_file && ring_load(&r, NULL, ring_file, len, &generation) == 0 && r.n > 0,
          "a ring file of version 4 restores (%zu snapshots)", r.n);
    sums(&r, &total, &runq);
    CHECK(total > 0 && runq == 0 && no_histograms(&r), "with its totals, runq 0, no histograms");
    CHECK(r.snaps[0]->nwakes == 0 && !r.snaps[0]->wakes, "and no wakers' pairs");
    ring_done(&r);

    _cleanup_free_ unsigned char *journal = read_file(journal_v1, &len);
    ring_init(&r, 3600 * SEC * 24 * 365 * 100, 64 << 20);
    CHECK(journal && journal_replay(&r, NULL, journal + 1, len - 1, 0, &out) == 0 &&
              out.records == 4 && !out.error,
          "a journal of version 1 replays (%llu records)", (unsigned long long)out.records);
    sums(&r, &total, &runq);
    CHECK(total > 0 && runq == 0 && no_histograms(&r), "with its totals, runq 0, no histograms");
    ring_done(&r);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s RING_V4 JOURNAL_V1_FUZZ_INPUT\n", argv[0]);
        return 2;
    }
    test_ring_file_round_trip();
    test_journal_round_trip();
    test_older_files(argv[1], argv[2]);
    return CHECK_EXIT();
}
