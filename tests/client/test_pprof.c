/* SPDX-License-Identifier: GPL-2.0-only */
/* pprof profiles from Dump replies, decoded again with protobuf-c: sample
 * types, values, locations leaf first, sharing, labels, mappings. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pprof.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;

/* Two stacks sharing main, read and the kernel's schedule; one frame
 * without a file ([vdso]); labels of the grouped fields. */
static const char reply_json[] =
    "{\"start_ns\":1000000000,\"end_ns\":3000000000,\"snapshots\":2,\"stacks\":["
    "{\"comm\":\"web\",\"pid\":42,\"tid\":43,\"state\":\"S\",\"cgroup\":\"/a.service\","
    "\"user\":[\"main\",\"read\"],\"kernel\":[\"do_syscall_64\",\"schedule\"],"
    "\"user_frames\":[{\"name\":\"main\",\"module\":\"/usr/bin/web\",\"offset\":4096,"
    "\"build_id\":\"abcd\"},{\"name\":\"read\",\"module\":\"/lib/libc.so.6\",\"offset\":512}],"
    "\"total_ns\":2500000,\"count\":3},"
    "{\"comm\":\"web\",\"pid\":42,\"tid\":44,\"state\":\"D\",\"cgroup\":\"/a.service\","
    "\"user\":[\"main\",\"[vdso]\"],\"kernel\":[\"schedule\"],"
    "\"user_frames\":[{\"name\":\"main\",\"module\":\"/usr/bin/web\",\"offset\":4096,"
    "\"build_id\":\"abcd\"},{\"name\":\"[vdso]\"}],"
    "\"total_ns\":700,\"count\":1}]}";

static const char *str(const Profile *p, int64_t i)
{
    return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "<out of table>";
}

static const Perftools__Profiles__Location *location(const Profile *p, uint64_t id)
{
    for (size_t i = 0; i < p->n_location; i++)
        if (p->location[i]->id == id)
            return p->location[i];
    return NULL;
}

static const char *function_name(const Profile *p, uint64_t location_id)
{
    const Perftools__Profiles__Location *l = location(p, location_id);

    if (!l || l->n_line != 1)
        return "<no line>";
    for (size_t i = 0; i < p->n_function; i++)
        if (p->function[i]->id == l->line[0]->function_id)
            return str(p, p->function[i]->name);
    return "<no function>";
}

/* The sample's frames, leaf first, joined by ';'. */
static void frames_of(const Profile *p, const Perftools__Profiles__Sample *s, char *buf,
                      size_t size)
{
    size_t len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < s->n_location_id && len < size; i++)
        len += snprintf(buf + len, size - len, "%s%s", i ? ";" : "",
                        function_name(p, s->location_id[i]));
}

static const char *label(const Profile *p, const Perftools__Profiles__Sample *s, const char *key,
                         long long *num)
{
    for (size_t i = 0; i < s->n_label; i++)
        if (strcmp(str(p, s->label[i]->key), key) == 0) {
            *num = s->label[i]->num;
            return str(p, s->label[i]->str);
        }
    return NULL;
}

static void check_profile(const Profile *p)
{
    const Perftools__Profiles__Sample *s0 = p->sample[0], *s1 = p->sample[1];
    const Perftools__Profiles__Location *main0, *main1;
    long long num = -1;
    char frames[256];

    CHECK(p->n_string_table > 0 && strcmp(p->string_table[0], "") == 0, "string 0 is \"\"");
    CHECK(p->n_sample_type == 2 && strcmp(str(p, p->sample_type[0]->type), "off_cpu") == 0 &&
              strcmp(str(p, p->sample_type[0]->unit), "nanoseconds") == 0 &&
              strcmp(str(p, p->sample_type[1]->type), "switches") == 0 &&
              strcmp(str(p, p->sample_type[1]->unit), "count") == 0,
          "sample types off_cpu/nanoseconds, switches/count");
    CHECK(strcmp(str(p, p->default_sample_type), "off_cpu") == 0, "off_cpu shown by default");
    CHECK(p->time_nanos == 1000000000 && p->duration_nanos == 2000000000, "the window");
    CHECK(p->n_sample == 2, "one sample per stack: %zu", p->n_sample);
    CHECK(s0->n_value == 2 && s0->value[0] == 2500000 && s0->value[1] == 3 && s1->value[0] == 700 &&
              s1->value[1] == 1,
          "values: total_ns and count");
    frames_of(p, s0, frames, sizeof(frames));
    CHECK(strcmp(frames, "schedule;do_syscall_64;read;main") == 0, "leaf first: %s", frames);
    frames_of(p, s1, frames, sizeof(frames));
    CHECK(strcmp(frames, "schedule;[vdso];main") == 0, "frame without a file: %s", frames);
    CHECK(s0->location_id[3] == s1->location_id[2] && s0->location_id[0] == s1->location_id[0],
          "equal frames share a location");
    CHECK(p->n_location == 5 && p->n_function == 5, "5 distinct locations and functions: %zu %zu",
          p->n_location, p->n_function);
    main0 = location(p, s0->location_id[3]);
    main1 = location(p, s0->location_id[2]);
    CHECK(main0 && main0->address == 4096 && main1 && main1->address == 512,
          "a user frame's address is its offset in the file");
    CHECK(p->n_mapping == 3, "mappings: the kernel, web and libc: %zu", p->n_mapping);
    for (size_t i = 0; main0 && i < p->n_mapping; i++)
        if (p->mapping[i]->id == main0->mapping_id)
            CHECK(strcmp(str(p, p->mapping[i]->filename), "/usr/bin/web") == 0 &&
                      strcmp(str(p, p->mapping[i]->build_id), "abcd") == 0 &&
                      p->mapping[i]->has_functions && p->mapping[i]->memory_limit > 4096,
                  "main's mapping: file, build-id, named, holds its address");
    CHECK(location(p, s1->location_id[1])->mapping_id == 0, "[vdso] is in no mapping");
    CHECK(label(p, s0, "pid", &num) && num == 42, "label pid");
    CHECK(label(p, s1, "tid", &num) && num == 44, "label tid");
    CHECK(strcmp(label(p, s0, "comm", &num) ?: "", "web") == 0, "label comm");
    CHECK(strcmp(label(p, s1, "state", &num) ?: "", "D") == 0, "label state");
    CHECK(strcmp(label(p, s0, "cgroup", &num) ?: "", "/a.service") == 0, "label cgroup");
}

int main(void)
{
    json_t *reply = json_loads(reply_json, 0, NULL);
    json_t *bad = json_loads("{\"stacks\":[{\"user\":[1],\"kernel\":[]}]}", 0, NULL);
    uint8_t *data = NULL;
    size_t len = 0;
    Profile *p;

    CHECK(pprof_encode(reply, &data, &len) == 0, "encoded: %zu bytes", len);
    p = perftools__profiles__profile__unpack(NULL, len, data);
    CHECK(p != NULL, "protobuf-c decodes it");
    if (p)
        check_profile(p);
    perftools__profiles__profile__free_unpacked(p, NULL);
    free(data);
    data = NULL;
    CHECK(pprof_encode(bad, &data, &len) == -EBADMSG && !data, "a frame that is not a string");
    json_decref(bad);
    json_decref(reply);
    return CHECK_EXIT();
}
