/* run_as UID GID PROG [ARG...]: PROG as that user, by a static program.
 *
 * perf record runs its command through whatever the test puts first; setpriv
 * maps libc before it execs the server, and perf 6.1 keeps that mapping in the
 * process's maps after the exec. Its libunwind then takes the lowest libc
 * mapping as libc's base: whenever setpriv's lay lower (half the runs, by
 * address randomisation), every libc frame lost its caller. A static program
 * maps no library, so nothing of it is left to confuse perf. Numeric ids only:
 * a name lookup would load NSS modules, which map libc. */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_id(const char *text, unsigned long *id)
{
    char *end;

    errno = 0;
    *id = strtoul(text, &end, 10);
    return errno || end == text || *end ? -1 : 0;
}

int main(int argc, char **argv)
{
    unsigned long uid, gid;

    if (argc < 4 || parse_id(argv[1], &uid) || parse_id(argv[2], &gid)) {
        fprintf(stderr, "usage: run_as UID GID PROG [ARG...]\n");
        return 2;
    }
    gid_t group = gid;
    if (setgroups(1, &group) || setgid(gid) || setuid(uid)) {
        fprintf(stderr, "run_as: %s\n", strerror(errno));
        return 1;
    }
    execvp(argv[3], argv + 3);
    fprintf(stderr, "run_as: %s: %s\n", argv[3], strerror(errno));
    return 127;
}
