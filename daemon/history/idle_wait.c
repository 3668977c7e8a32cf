/* SPDX-License-Identifier: GPL-2.0-only */
#include "idle_wait.h"

#include <string.h>

#include "macro.h"
#include "sorted_search.h"

/* The kernel functions of the waits for events or for time, sorted: the
 * system calls' entries and the functions they wait in (either may be
 * inlined away, by kernel version). */
static const char *const waiting_for_work[] = {
    "__x64_sys_clock_nanosleep",
    "__x64_sys_epoll_pwait",
    "__x64_sys_epoll_pwait2",
    "__x64_sys_epoll_wait",
    "__x64_sys_nanosleep",
    "__x64_sys_poll",
    "__x64_sys_ppoll",
    "__x64_sys_pselect6",
    "__x64_sys_select",
    "common_nsleep",
    "core_sys_select",
    "do_epoll_wait",
    "do_nanosleep",
    "do_select",
    "do_sys_poll",
    "hrtimer_nanosleep",
};

/* The kernel functions of a futex wait. */
static const char *const futex_wait_functions[] = {"__futex_wait", "futex_do_wait", "futex_wait",
                                                   "futex_wait_queue"};

static int cmp_name(const void *elem, const void *key)
{
    return strcmp(*(const char *const *)elem, key);
}

static bool in_sorted(const char *const *names, size_t n, const char *name)
{
    bool found;

    sorted_search(names, n, sizeof(*names), name, cmp_name, &found);
    return found;
}

/* Whether a frame of stack id is one of names (sorted). */
static bool stack_has(const struct intern *in, uint32_t id, const char *const *names, size_t n)
{
    uint32_t nframes;
    const uint32_t *frames = id ? intern_stack_get(in, id, &nframes) : NULL;

    for (uint32_t i = 0; frames && i < nframes; i++)
        if (in_sorted(names, n, intern_string_get(in, frames[i])))
            return true;
    return false;
}

/* glibc's names for one function vary by build and version
 * (___pthread_cond_wait, __pthread_cond_timedwait64): the name without its
 * leading underscores. */
static const char *bare(const char *name)
{
    while (*name == '_')
        name++;
    return name;
}

/* Whether the innermost pthread function of user stack id (root first) is a
 * condition-variable wait: pthread_cond_wait, _timedwait, _clockwait. */
static bool waits_on_condition(const struct intern *in, uint32_t id)
{
    uint32_t nframes;
    const uint32_t *frames = id ? intern_stack_get(in, id, &nframes) : NULL;

    for (uint32_t i = frames ? nframes : 0; i-- > 0;) {
        const char *name = bare(intern_string_get(in, frames[i]));

        if (strncmp(name, "pthread_", strlen("pthread_")) == 0)
            return strncmp(name, "pthread_cond_", strlen("pthread_cond_")) == 0 &&
                   strstr(name, "wait");
    }
    return false;
}

bool idle_wait(const struct intern *in, const struct record *rec)
{
    if (rec->state != 'S')
        return false;
    if (stack_has(in, rec->kstack, waiting_for_work, ARRAY_SIZE(waiting_for_work)))
        return true;
    return stack_has(in, rec->kstack, futex_wait_functions, ARRAY_SIZE(futex_wait_functions)) &&
           waits_on_condition(in, rec->ustack);
}
