/* SPDX-License-Identifier: GPL-2.0-only */
/* The journal's bytes: snapshots read back as written, ids that the ring
 * handed out again read as their new content, a record that never reached
 * the file defines nothing, a torn tail is cut, and a journal the ring file
 * holds already is skipped. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "journal.h"
#include "stacks.h"

#define SEC 1000000000LL

struct bytes {
    unsigned char *data;
    size_t len;
};

static void append(struct bytes *b, const void *data, size_t len)
{
    b->data = realloc(b->data, b->len + len);
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

/* A snapshot of one thread named comm, blocked in main;wait_<comm>. */
static struct snapshot *snapshot_of(struct intern *in, int64_t start, const char *comm)
{
    struct snapshot *s = calloc(1, sizeof(*s) + sizeof(struct record));
    char leaf[64];

    snprintf(leaf, sizeof(leaf), "wait_%s", comm);
    s->start_ns = start;
    s->end_ns = start + SEC;
    s->n = 1;
    s->records[0] = (struct record){
        .total_ns = 1000 + start / SEC,
        .count = 3,
        .tgid = 42,
        .tid = 43,
        .uid = 1000,
        .comm = intern_string(in, comm),
        .cgroup = intern_string(in, "/system.slice/db.service"),
        .ustack = stack_of(in, "main", leaf),
        .kstack = stack_of(in, "do_syscall_64", "schedule"),
        .state = 'S',
    };
    return s;
}

/* A new journal: its header in j. */
static void journal_begin(struct journal_writer *w, uint64_t generation, struct bytes *j)
{
    unsigned char header[JOURNAL_HEADER_SIZE];

    journal_writer_init(w, generation, header);
    append(j, header, sizeof(header));
}

static void journal_record(struct journal_writer *w, struct intern *in, const struct snapshot *s,
                           struct bytes *out)
{
    char *buf;
    size_t len;

    CHECK(journal_encode(w, in, s, &buf, &len) == 0, "snapshot at %lld encoded (%zu bytes)",
          (long long)(s->start_ns / SEC), len);
    append(out, buf, len);
    journal_written(w, len);
    free(buf);
}

static const char *comm_of(const struct ring *r, size_t i)
{
    return intern_string_get(&r->intern, r->snaps[i]->records[0].comm);
}

static const char *leaf_of(const struct ring *r, size_t i)
{
    uint32_t n;
    const uint32_t *frames = intern_stack_get(&r->intern, r->snaps[i]->records[0].ustack, &n);

    return n == 2 ? intern_string_get(&r->intern, frames[1]) : "";
}

/* Three snapshots; the first's names are freed before the second is made,
 * so that the second gets the very same ids for other names. */
static struct bytes write_journal(uint64_t generation)
{
    struct journal_writer w = {0};
    struct bytes out = {0};
    struct intern in;
    struct snapshot *s;

    intern_init(&in);
    journal_begin(&w, generation, &out);
    s = snapshot_of(&in, 100 * SEC, "alpha");
    journal_record(&w, &in, s, &out);
    snapshot_free(&in, s);
    s = snapshot_of(&in, 101 * SEC, "beta");
    journal_record(&w, &in, s, &out);
    snapshot_free(&in, s);
    s = snapshot_of(&in, 102 * SEC, "beta");
    journal_record(&w, &in, s, &out);
    snapshot_free(&in, s);
    CHECK(w.records == 3 && w.bytes == out.len, "the writer counts what it wrote");
    journal_writer_done(&w);
    intern_done(&in);
    return out;
}

static void test_read_back(void)
{
    struct bytes j = write_journal(7);
    struct journal_replay out;
    struct ring r;

    ring_init(&r, 3600 * SEC, 64 << 20);
    CHECK(journal_replay(&r, NULL, j.data, j.len, 6, &out) == 0, "a journal reads");
    CHECK(out.records == 3 && out.cut_bytes == 0 && !out.error && out.generation == 7,
          "all three snapshots (%llu), nothing cut", (unsigned long long)out.records);
    CHECK(r.n == 3 && strcmp(comm_of(&r, 0), "alpha") == 0 &&
              strcmp(leaf_of(&r, 0), "wait_alpha") == 0,
          "the first as written");
    CHECK(r.n == 3 && strcmp(comm_of(&r, 1), "beta") == 0 &&
              strcmp(leaf_of(&r, 1), "wait_beta") == 0,
          "an id handed out again reads as its new name (%s, %s)", comm_of(&r, 1), leaf_of(&r, 1));
    CHECK(r.n == 3 && r.snaps[2]->records[0].total_ns == 1102 && r.snaps[2]->records[0].uid == 1000,
          "figures as written");
    ring_done(&r);

    ring_init(&r, 3600 * SEC, 64 << 20);
    journal_replay(&r, NULL, j.data, j.len, 7, &out);
    CHECK(out.records == 0 && r.n == 0, "a journal the ring file holds already is skipped");
    ring_done(&r);
    free(j.data);
}

/* A busy interval's record is deflated: it reads back all the same. */
static void test_large_record(void)
{
    struct journal_writer w = {0};
    struct bytes j = {0};
    struct journal_replay out;
    struct snapshot *s = calloc(1, sizeof(*s) + 500 * sizeof(struct record));
    struct intern in;
    struct ring r;
    uint64_t total = 0;

    intern_init(&in);
    journal_begin(&w, 1, &j);
    s->start_ns = 100 * SEC;
    s->end_ns = 101 * SEC;
    for (s->n = 0; s->n < 500; s->n++) {
        char leaf[32];

        snprintf(leaf, sizeof(leaf), "leaf_%u", s->n);
        s->records[s->n] = (struct record){.total_ns = s->n,
                                           .tid = s->n,
                                           .comm = intern_string(&in, "busy"),
                                           .ustack = stack_of(&in, "main", leaf),
                                           .state = 'D'};
        total += s->n;
    }
    journal_record(&w, &in, s, &j);
    CHECK(j.len < JOURNAL_HEADER_SIZE + 500 * 44, "deflated: %zu bytes for 500 records", j.len);
    ring_init(&r, 3600 * SEC, 64 << 20);
    journal_replay(&r, NULL, j.data, j.len, 0, &out);
    CHECK(out.records == 1 && r.n == 1 && r.snaps[0]->n == 500 &&
              strcmp(leaf_of(&r, 0), "leaf_0") == 0,
          "and read back whole");
    for (uint32_t i = 0; r.n && i < r.snaps[0]->n; i++)
        total -= r.snaps[0]->records[i].total_ns;
    CHECK(total == 0, "every figure as written");
    ring_done(&r);
    snapshot_free(&in, s);
    journal_writer_done(&w);
    intern_done(&in);
    free(j.data);
}

static void test_torn_tail(void)
{
    struct bytes j = write_journal(1);
    struct journal_replay out;
    struct ring r;

    ring_init(&r, 3600 * SEC, 64 << 20);
    journal_replay(&r, NULL, j.data, j.len - 5, 0, &out);
    CHECK(out.records == 2 && out.cut_bytes > 0 && !out.error && r.n == 2,
          "a record cut short is cut, the ones before kept (%llu)",
          (unsigned long long)out.records);
    ring_done(&r);

    append(&j, (unsigned char[100]){0}, 100);
    ring_init(&r, 3600 * SEC, 64 << 20);
    journal_replay(&r, NULL, j.data, j.len, 0, &out);
    CHECK(out.records == 3 && out.cut_bytes == 100, "zeros after the last record are cut");
    ring_done(&r);

    j.data[40] ^= 1;
    ring_init(&r, 3600 * SEC, 64 << 20);
    journal_replay(&r, NULL, j.data, j.len, 0, &out);
    CHECK(out.records == 0 && out.cut_bytes == j.len - JOURNAL_HEADER_SIZE && r.n == 0,
          "a flipped bit ends the journal at that record");
    ring_done(&r);
    j.data[3] ^= 1;
    CHECK(journal_replay(&r, NULL, j.data, j.len, 0, &out) < 0, "a foreign header is refused");
    free(j.data);
}

/* A record that could not be written must not count as having defined its
 * names: the next one defines them again. */
static void test_record_not_written(void)
{
    struct journal_writer w = {0};
    struct bytes j = {0};
    struct journal_replay out;
    struct intern in;
    struct snapshot *s;
    struct ring r;
    char *lost;
    size_t len;

    intern_init(&in);
    journal_begin(&w, 1, &j);
    s = snapshot_of(&in, 100 * SEC, "gamma");
    journal_encode(&w, &in, s, &lost, &len);
    journal_not_written(&w);
    free(lost);
    journal_record(&w, &in, s, &j);
    snapshot_free(&in, s);
    ring_init(&r, 3600 * SEC, 64 << 20);
    journal_replay(&r, NULL, j.data, j.len, 0, &out);
    CHECK(out.records == 1 && !out.error && r.n == 1 && strcmp(comm_of(&r, 0), "gamma") == 0,
          "the record after a lost one defines its names itself");
    ring_done(&r);
    journal_writer_done(&w);
    intern_done(&in);
    free(j.data);
}

int main(void)
{
    test_read_back();
    test_large_record();
    test_torn_tail();
    test_record_not_written();
    return CHECK_EXIT();
}
