// SPDX-License-Identifier: GPL-2.0-only
// The symbolizer test program in C++: a member function in a namespace, whose
// mangled name must come out demangled, with its parameter types.
#include <cinttypes>
#include <cstdio>
#include <unistd.h>

namespace ns {
struct Worker {
    static int wait_for_job(int n);
};

__attribute__((noinline)) int Worker::wait_for_job(int n)
{
    asm volatile("" ::: "memory");
    return n + 1;
}
} // namespace ns

int main()
{
    char c;

    std::printf("pid %d\n", (int)getpid());
    std::printf("CHECK leaf 0x%" PRIxPTR " ns::Worker::wait_for_job(int)\n",
                (uintptr_t)&ns::Worker::wait_for_job);
    std::printf("ready\n");
    std::fflush(stdout);
    while (read(STDIN_FILENO, &c, 1) > 0)
        ;
    return ns::Worker::wait_for_job(0) == 1 ? 0 : 1;
}
