/* SPDX-License-Identifier: GPL-2.0-only */
#include "pprof.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "array.h"
#include "macro.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

/* Where kernel frames are, by the name perf and pprof give the kernel. */
#define KERNEL_MAPPING "[kernel.kallsyms]"

/* A sample's locations and labels, as offsets into the builder's flat
 * arrays: those move as they grow, so pointers are made at the end. */
struct sample_span {
    size_t loc, nloc, label, nlabel;
};

/* Everything in a profile is shared by id: strings, mappings, functions and
 * locations are each made once and found again through ids. */
struct builder {
    json_t *ids; /* "KIND\x1fKEY" -> string index, or mapping/function/location id */
    char **strings;
    Mapping *mappings;
    Function *functions;
    Location *locations;
    Line *lines; /* one per location, same index */
    Sample *samples;
    struct sample_span *spans;
    uint64_t *location_ids;
    int64_t *values; /* two per sample */
    Label *labels;
    size_t n_strings, n_mappings, n_functions, n_locations, n_samples, n_location_ids, n_labels;
    size_t cap_strings, cap_mappings, cap_functions, cap_locations, cap_lines, cap_samples,
        cap_spans, cap_location_ids, cap_values, cap_labels;
};

static void builder_done(struct builder *b)
{
    json_decref(b->ids);
    for (size_t i = 0; i < b->n_strings; i++)
        free(b->strings[i]);
    free(b->strings);
    free(b->mappings);
    free(b->functions);
    free(b->locations);
    free(b->lines);
    free(b->samples);
    free(b->spans);
    free(b->location_ids);
    free(b->values);
    free(b->labels);
}

/* The id kept under the key made of fmt, or 0; *key is that key. */
__attribute__((format(printf, 3, 4))) static json_int_t known(struct builder *b, char **key,
                                                              const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = vasprintf(key, fmt, ap);
    va_end(ap);
    if (r < 0) {
        *key = NULL;
        return -ENOMEM;
    }
    return json_integer_value(json_object_get(b->ids, *key));
}

static int remember(struct builder *b, const char *key, json_int_t id)
{
    return json_object_set_new(b->ids, key, json_integer(id)) < 0 ? -ENOMEM : 0;
}

/* The index of s in the string table (0 is ""), or -ENOMEM. */
static int64_t string_index(struct builder *b, const char *s)
{
    _cleanup_free_ char *key = NULL;
    json_int_t id;

    if (!*s)
        return 0;
    id = known(b, &key, "s\x1f%s", s);
    if (id)
        return id;
    if (array_reserve(&b->strings, &b->cap_strings, b->n_strings + 1, sizeof(*b->strings), 256) < 0)
        return -ENOMEM;
    b->strings[b->n_strings] = strdup(s);
    if (!b->strings[b->n_strings] || remember(b, key, (json_int_t)b->n_strings) < 0)
        return -ENOMEM;
    return (int64_t)b->n_strings++;
}

/* The mapping of a file (with its build-id, hex, or ""), grown to hold
 * address: addresses in our mappings are offsets in the file. */
static int64_t mapping_id(struct builder *b, const char *file, const char *build_id,
                          uint64_t address)
{
    _cleanup_free_ char *key = NULL;
    json_int_t id = known(b, &key, "m\x1f%s\x1f%s", file, build_id);
    int64_t name, bid;
    Mapping *m;

    if (id < 0)
        return id;
    if (!id) {
        name = string_index(b, file);
        bid = string_index(b, build_id);
        if (name < 0 || bid < 0 ||
            array_reserve(&b->mappings, &b->cap_mappings, b->n_mappings + 1, sizeof(*b->mappings),
                          16) < 0)
            return -ENOMEM;
        id = (json_int_t)++b->n_mappings;
        m = &b->mappings[id - 1];
        perftools__profiles__mapping__init(m);
        m->id = (uint64_t)id;
        m->filename = name;
        m->build_id = bid;
        /* frames come named: pprof must not try to symbolize them again */
        m->has_functions = true;
        if (remember(b, key, id) < 0)
            return -ENOMEM;
    }
    m = &b->mappings[id - 1];
    if (address >= m->memory_limit)
        m->memory_limit = address + 1;
    return id;
}

static int64_t function_id(struct builder *b, const char *name, const char *file)
{
    _cleanup_free_ char *key = NULL;
    json_int_t id = known(b, &key, "f\x1f%s\x1f%s", name, file);
    int64_t name_index, file_index;
    Function *f;

    if (id)
        return id;
    name_index = string_index(b, name);
    file_index = string_index(b, file);
    if (name_index < 0 || file_index < 0 ||
        array_reserve(&b->functions, &b->cap_functions, b->n_functions + 1, sizeof(*b->functions),
                      256) < 0)
        return -ENOMEM;
    id = (json_int_t)++b->n_functions;
    f = &b->functions[id - 1];
    perftools__profiles__function__init(f);
    f->id = (uint64_t)id;
    f->name = f->system_name = name_index;
    f->filename = file_index;
    return remember(b, key, id) < 0 ? -ENOMEM : id;
}

/* A frame's location: its name at address of mapping (0: none), or at line
 * of source file (0: none). */
static int64_t location_id(struct builder *b, const char *name, int64_t mapping, uint64_t address,
                           const char *file, int64_t line)
{
    _cleanup_free_ char *key = NULL;
    json_int_t id = known(b, &key, "l\x1f%lld\x1f%llx\x1f%s\x1f%s\x1f%lld", (long long)mapping,
                          (unsigned long long)address, name, line ? file : "", (long long)line);
    int64_t function;
    Location *l;

    if (id)
        return id;
    function = function_id(b, name, file);
    if (function < 0 ||
        array_reserve(&b->locations, &b->cap_locations, b->n_locations + 1, sizeof(*b->locations),
                      256) < 0 ||
        array_reserve(&b->lines, &b->cap_lines, b->n_locations + 1, sizeof(*b->lines), 256) < 0)
        return -ENOMEM;
    id = (json_int_t)++b->n_locations;
    l = &b->locations[id - 1];
    perftools__profiles__location__init(l);
    perftools__profiles__line__init(&b->lines[id - 1]);
    l->id = (uint64_t)id;
    l->mapping_id = (uint64_t)mapping;
    l->address = address;
    b->lines[id - 1].function_id = (uint64_t)function;
    b->lines[id - 1].line = line;
    return remember(b, key, id) < 0 ? -ENOMEM : id;
}

static int add_location(struct builder *b, int64_t id)
{
    if (id < 0)
        return (int)id;
    if (array_reserve(&b->location_ids, &b->cap_location_ids, b->n_location_ids + 1,
                      sizeof(*b->location_ids), 1024) < 0)
        return -ENOMEM;
    b->location_ids[b->n_location_ids++] = (uint64_t)id;
    return 0;
}

/* A Python function's frame, {name, file, line} with frame detail: a
 * function of its own name (the name shown less its " (file.py:line)"), in
 * its source file, at that line, as pprof has interpreted code. */
static int add_source_frame(struct builder *b, const char *name, const char *file, json_int_t line)
{
    const char *paren = strrchr(name, '(');
    _cleanup_free_ char *function = NULL;

    if (paren && paren > name && paren[-1] == ' ' && name[strlen(name) - 1] == ')')
        function = strndup(name, (size_t)(paren - 1 - name));
    else
        function = strdup(name);
    if (!function)
        return -ENOMEM;
    return add_location(b, location_id(b, function, 0, 0, file, line));
}

/* A user frame, {name, module, offset, build_id} with frame detail, else its name. */
static int add_user_frame(struct builder *b, const json_t *frame)
{
    const char *name =
        json_string_value(frame) ?: json_string_value(json_object_get(frame, "name"));
    const char *module = json_string_value(json_object_get(frame, "module"));
    const char *file = json_string_value(json_object_get(frame, "file"));
    json_t *offset = json_object_get(frame, "offset"), *line = json_object_get(frame, "line");
    uint64_t address;
    int64_t mapping;

    if (!name)
        return -EBADMSG;
    if (file && json_is_integer(line) && json_integer_value(line) > 0)
        return add_source_frame(b, name, file, json_integer_value(line));
    if (!module || !json_is_integer(offset))
        return add_location(b, location_id(b, name, 0, 0, "", 0));
    address = (uint64_t)json_integer_value(offset);
    mapping =
        mapping_id(b, module, json_string_value(json_object_get(frame, "build_id")) ?: "", address);
    if (mapping < 0)
        return (int)mapping;
    return add_location(b, location_id(b, name, mapping, address, module, 0));
}

static int add_kernel_frame(struct builder *b, const json_t *frame)
{
    const char *name = json_string_value(frame);
    /* made at its first frame: pprof takes the first mapping for the program */
    int64_t mapping = mapping_id(b, KERNEL_MAPPING, "", 0);

    if (!name)
        return -EBADMSG;
    if (mapping < 0)
        return (int)mapping;
    return add_location(b, location_id(b, name, mapping, 0, KERNEL_MAPPING, 0));
}

static int add_label(struct builder *b, const json_t *stack, const char *key)
{
    json_t *v = json_object_get(stack, key);
    Label *l;
    int64_t k, s = 0;

    if (!v)
        return 0;
    k = string_index(b, key);
    if (json_is_string(v))
        s = string_index(b, json_string_value(v));
    if (k < 0 || s < 0 ||
        array_reserve(&b->labels, &b->cap_labels, b->n_labels + 1, sizeof(*b->labels), 1024) < 0)
        return -ENOMEM;
    l = &b->labels[b->n_labels++];
    perftools__profiles__label__init(l);
    l->key = k;
    if (json_is_string(v))
        l->str = s;
    else
        l->num = json_integer_value(v);
    return 0;
}

/* One stack of the reply: locations leaf first (kernel, then user), values, labels. */
static int add_sample(struct builder *b, const json_t *stack)
{
    static const char *const label_keys[] = {"pid", "tid", "comm", "state", "cgroup"};
    const json_t *user = json_object_get(stack, "user_frames") ?: json_object_get(stack, "user");
    const json_t *kernel = json_object_get(stack, "kernel");
    struct sample_span span = {.loc = b->n_location_ids, .label = b->n_labels};
    size_t n = b->n_samples;
    int r = 0;

    for (size_t i = json_array_size(kernel); r == 0 && i-- > 0;)
        r = add_kernel_frame(b, json_array_get(kernel, i));
    for (size_t i = json_array_size(user); r == 0 && i-- > 0;)
        r = add_user_frame(b, json_array_get(user, i));
    for (size_t i = 0; r == 0 && i < ARRAY_SIZE(label_keys); i++)
        r = add_label(b, stack, label_keys[i]);
    if (r < 0)
        return r;
    if (array_reserve(&b->samples, &b->cap_samples, n + 1, sizeof(*b->samples), 256) < 0 ||
        array_reserve(&b->spans, &b->cap_spans, n + 1, sizeof(*b->spans), 256) < 0 ||
        array_reserve(&b->values, &b->cap_values, 2 * (n + 1), sizeof(*b->values), 512) < 0)
        return -ENOMEM;
    span.nloc = b->n_location_ids - span.loc;
    span.nlabel = b->n_labels - span.label;
    b->spans[n] = span;
    b->values[2 * n] = json_integer_value(json_object_get(stack, "total_ns"));
    b->values[2 * n + 1] = json_integer_value(json_object_get(stack, "count"));
    b->n_samples++;
    return 0;
}

/* An array of pointers to each of n elements of size bytes at base. */
static void **pointers(void *base, size_t n, size_t size)
{
    void **p = calloc(n ?: 1, sizeof(*p));

    for (size_t i = 0; p && i < n; i++)
        p[i] = (char *)base + i * size;
    return p;
}

static int pack(struct builder *b, const json_t *reply, uint8_t **ret, size_t *len)
{
    ValueType types[2] = {PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
                          PERFTOOLS__PROFILES__VALUE_TYPE__INIT};
    ValueType *type_ptrs[2] = {&types[0], &types[1]};
    _cleanup_free_ void **samples = pointers(b->samples, b->n_samples, sizeof(*b->samples));
    _cleanup_free_ void **mappings = pointers(b->mappings, b->n_mappings, sizeof(*b->mappings));
    _cleanup_free_ void **functions = pointers(b->functions, b->n_functions, sizeof(*b->functions));
    _cleanup_free_ void **locations = pointers(b->locations, b->n_locations, sizeof(*b->locations));
    _cleanup_free_ void **lines = pointers(b->lines, b->n_locations, sizeof(*b->lines));
    _cleanup_free_ void **labels = pointers(b->labels, b->n_labels, sizeof(*b->labels));
    Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
    int64_t start = json_integer_value(json_object_get(reply, "start_ns"));
    int64_t end = json_integer_value(json_object_get(reply, "end_ns"));

    if (!samples || !mappings || !functions || !locations || !lines || !labels)
        return -ENOMEM;
    types[0].type = string_index(b, "off_cpu");
    types[0].unit = string_index(b, "nanoseconds");
    types[1].type = string_index(b, "switches");
    types[1].unit = string_index(b, "count");
    if (types[0].type < 0 || types[0].unit < 0 || types[1].type < 0 || types[1].unit < 0)
        return -ENOMEM;
    for (size_t i = 0; i < b->n_locations; i++) {
        b->locations[i].n_line = 1;
        b->locations[i].line = (Line **)&lines[i];
    }
    for (size_t i = 0; i < b->n_samples; i++) {
        Sample *s = &b->samples[i];

        perftools__profiles__sample__init(s);
        s->n_location_id = b->spans[i].nloc;
        s->location_id = b->location_ids + b->spans[i].loc;
        s->n_value = 2;
        s->value = b->values + 2 * i;
        s->n_label = b->spans[i].nlabel;
        s->label = (Label **)labels + b->spans[i].label;
    }
    p.n_sample_type = 2;
    p.sample_type = type_ptrs;
    p.n_sample = b->n_samples;
    p.sample = (Sample **)samples;
    p.n_mapping = b->n_mappings;
    p.mapping = (Mapping **)mappings;
    p.n_location = b->n_locations;
    p.location = (Location **)locations;
    p.n_function = b->n_functions;
    p.function = (Function **)functions;
    p.n_string_table = b->n_strings;
    p.string_table = b->strings;
    /* pprof shows the last sample type unless told: off-CPU time is the point */
    p.default_sample_type = types[0].type;
    p.time_nanos = start;
    p.duration_nanos = end > start ? end - start : 0;
    *len = perftools__profiles__profile__get_packed_size(&p);
    *ret = malloc(*len ?: 1);
    if (!*ret)
        return -ENOMEM;
    perftools__profiles__profile__pack(&p, *ret);
    return 0;
}

int pprof_encode(const json_t *reply, uint8_t **ret, size_t *len)
{
    struct builder b = {.ids = json_object()};
    const json_t *stacks = json_object_get(reply, "stacks");
    int r = 0;

    if (!b.ids || array_reserve(&b.strings, &b.cap_strings, 1, sizeof(*b.strings), 256) < 0 ||
        !(b.strings[0] = strdup(""))) {
        builder_done(&b);
        return -ENOMEM;
    }
    b.n_strings = 1;
    if (!json_is_array(stacks))
        r = -EBADMSG;
    for (size_t i = 0; r == 0 && i < json_array_size(stacks); i++)
        r = add_sample(&b, json_array_get(stacks, i));
    if (r == 0)
        r = pack(&b, reply, ret, len);
    builder_done(&b);
    return r;
}

int pprof_write(int fd, const json_t *reply)
{
    _cleanup_free_ uint8_t *data = NULL;
    size_t len;
    gzFile gz;
    int dup_fd, r = pprof_encode(reply, &data, &len);

    if (r < 0)
        return r;
    /* gzclose closes the descriptor it was given: give it its own */
    dup_fd = dup(fd);
    if (dup_fd < 0)
        return -errno;
    gz = gzdopen(dup_fd, "wb");
    if (!gz) {
        close(dup_fd);
        return -ENOMEM;
    }
    if (len && gzwrite(gz, data, (unsigned)len) != (int)len)
        r = -EIO;
    if (gzclose(gz) != Z_OK && r == 0)
        r = -EIO;
    return r;
}
