/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A program that embeds Debian's libpython3.11.so (a PIC library, loaded at
 * an address of its own) and runs a script in it: python_waits.py, with the
 * arguments given. Usage: embedded_python SCRIPT ARGS...
 *
 * embedded_python --idle N: links the library, never starts the interpreter
 * (as Debian's perf does) and sleeps N times 1 ms.
 *
 * embedded_python --keys N SCRIPT ARGS...: makes N thread-specific keys of its
 * own before it starts the interpreter, whose GIL-state key then lies past
 * glibc's first 32 (in a second-level block).
 *
 * The two calls it needs are declared here: Debian's python3.11-dev need not
 * be installed for the tests.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void Py_Initialize(void);
int Py_FinalizeEx(void);
int PyRun_SimpleStringFlags(const char *command, void *flags);

int main(int argc, char **argv)
{
    char code[4096];
    size_t n;
    int r;

    if (argc < 2) {
        fprintf(stderr, "usage: embedded_python [--keys N] SCRIPT ARGS... | --idle N\n");
        return 2;
    }
    if (strcmp(argv[1], "--idle") == 0 && argc == 3) {
        for (long i = atol(argv[2]); i > 0; i--)
            nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
        return 0;
    }
    if (strcmp(argv[1], "--keys") == 0 && argc > 3) {
        for (long i = atol(argv[2]); i > 0; i--) {
            pthread_key_t key;

            if (pthread_key_create(&key, NULL) != 0) {
                perror("embedded_python: pthread_key_create");
                return 1;
            }
        }
        argv += 2;
        argc -= 2;
    }
    /* the arguments are the test's own paths and words: no quotes in them */
    n = (size_t)snprintf(code, sizeof(code), "import runpy, sys\nsys.argv = [");
    for (int i = 1; i < argc && n < sizeof(code); i++)
        n += (size_t)snprintf(code + n, sizeof(code) - n, "'%s', ", argv[i]);
    if (n < sizeof(code))
        n += (size_t)snprintf(code + n, sizeof(code) - n,
                              "]\nrunpy.run_path('%s', run_name='__main__')\n", argv[1]);
    if (n >= sizeof(code)) {
        fprintf(stderr, "embedded_python: arguments too long\n");
        return 2;
    }
    Py_Initialize();
    r = PyRun_SimpleStringFlags(code, NULL);
    if (Py_FinalizeEx() < 0)
        r = 1;
    return r ? 1 : 0;
}
