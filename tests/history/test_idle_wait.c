/* SPDX-License-Identifier: GPL-2.0-only */
/* --no-idle's rule on the stacks the kernel and glibc give (frames as
 * offcpud names them, root first): what is idle, and what must never be. */
#include <string.h>

#include "check.h"
#include "idle_wait.h"

#define MAX_FRAMES 16

/* A stack of ";"-separated frames, root first; 0 for "". */
static uint32_t stack_of(struct intern *in, const char *text)
{
    char copy[512], *save = NULL;
    uint32_t frames[MAX_FRAMES], n = 0;

    if (!*text)
        return 0;
    snprintf(copy, sizeof(copy), "%s", text);
    for (char *f = strtok_r(copy, ";", &save); f && n < MAX_FRAMES; f = strtok_r(NULL, ";", &save))
        frames[n++] = intern_string(in, f);
    return intern_stack(in, frames, n);
}

static bool idle(struct intern *in, char state, const char *user, const char *kernel)
{
    struct record rec = {
        .state = state, .ustack = stack_of(in, user), .kstack = stack_of(in, kernel)};

    return idle_wait(in, &rec);
}

#define ENTRY "entry_SYSCALL_64_after_hwframe;do_syscall_64;"
#define FUTEX ENTRY "__x64_sys_futex;do_futex;futex_wait;__futex_wait;futex_do_wait;schedule"

int main(void)
{
    struct intern in;

    intern_init(&in);
    CHECK(idle(&in, 'S', "start_thread;event_loop;epoll_wait",
               ENTRY "__x64_sys_epoll_wait;do_epoll_wait;schedule_hrtimeout_range_clock;schedule"),
          "epoll_wait is idle");
    CHECK(idle(&in, 'S', "start_thread;timer_loop;__nanosleep;clock_nanosleep",
               ENTRY "__x64_sys_clock_nanosleep;common_nsleep;hrtimer_nanosleep;do_nanosleep;"
                     "schedule"),
          "a sleep is idle");
    CHECK(idle(&in, 'S', "", ENTRY "do_sys_poll;schedule_hrtimeout_range_clock;schedule"),
          "poll is idle without user frames (the kernel's alone decide)");
    CHECK(idle(&in, 'S',
               "start_thread;pool_worker;pthread_cond_timedwait;"
               "__futex_abstimed_wait_common",
               FUTEX),
          "a condition variable's wait is idle");
    CHECK(idle(&in, 'S',
               "start_thread;worker;___pthread_cond_wait;__pthread_cond_wait_common;"
               "__futex_abstimed_wait_common",
               FUTEX),
          "so under glibc's inner names");

    CHECK(!idle(&in, 'S', "start_thread;request;pthread_mutex_lock;__lll_lock_wait", FUTEX),
          "a mutex wait is not idle");
    CHECK(!idle(&in, 'S',
                "start_thread;worker;pthread_cond_wait;__pthread_mutex_cond_lock;"
                "__lll_lock_wait",
                FUTEX),
          "nor the re-lock after a condition variable's wakeup");
    CHECK(!idle(&in, 'S', "start_thread;request;pthread_rwlock_rdlock;__futex_abstimed_wait_common",
                FUTEX),
          "nor a rwlock wait");
    CHECK(!idle(&in, 'S', "main;__pthread_clockjoin_ex;__futex_abstimed_wait_common", FUTEX),
          "nor a join");
    CHECK(!idle(&in, 'S', "", FUTEX), "nor a futex wait whose user frames are not known");
    CHECK(!idle(&in, 'S', "start_thread;handle;read",
                ENTRY "ksys_read;vfs_read;anon_pipe_read;schedule"),
          "nor a read of a pipe");
    CHECK(!idle(&in, 'D', "start_thread;checkpoint;fsync",
                ENTRY "__x64_sys_fsync;do_fsync;ext4_sync_file;io_schedule;schedule"),
          "nor I/O");
    CHECK(!idle(&in, 'R', "start_thread;event_loop;epoll_wait",
                ENTRY "__x64_sys_epoll_wait;do_epoll_wait;schedule"),
          "nor a preemption, wherever it is");
    CHECK(!idle(&in, 'S', "", ""), "nor a stack not taken");
    intern_done(&in);
    return CHECK_EXIT();
}
