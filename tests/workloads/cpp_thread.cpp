// SPDX-License-Identifier: GPL-2.0-only
// A std::thread sleeping 20 x 10 ms, built without frame pointers (as Debian
// builds): its callers run through libstdc++'s thread routine to glibc's
// start_thread and clone3, which only call frame information can tell.
#include <chrono>
#include <cstdio>
#include <thread>
#include <unistd.h>

__attribute__((noinline)) static void cpp_thread_sleeps_20x10ms()
{
    for (int i = 0; i < 20; i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

int main()
{
    std::thread t(cpp_thread_sleeps_20x10ms);

    t.join();
    std::printf("{\"pid\":%d}\n", (int)getpid());
    return 0;
}
