/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Files no one else controls. The state directory holds every user's stacks,
 * and the daemon reads and writes it as root: whoever could plant a file or a
 * symlink there could make root overwrite a file of their choosing, or feed
 * it records forged for any uid. So everything in it is reached through one
 * directory descriptor, opened once and checked; nothing is opened through a
 * symlink, nothing blocks at open (a FIFO would hang the start), and only a
 * regular file owned by the daemon's own user (root) and not writable by
 * group or others is read. New files are created exclusively under a
 * temporary name, then renamed into place: what was at that name before is
 * never written through.
 *
 * Trust comes from ownership and mode, not from a keyed MAC. A file that
 * only root can write can only have been written by root; a MAC key would
 * have to be kept where root keeps it, beside the files, so anyone able to
 * forge a file could read the key too, and it would add nothing. The files'
 * checksums are there for tears and decay, not against forgery.
 */
#ifndef OWNED_FILES_H
#define OWNED_FILES_H

#include <stddef.h>

/* Room for the reason a directory or file is refused. */
#define OWNED_WHY_MAX 128

/* Create the directory path (0700) if missing and open it. -EPERM, -ELOOP,
 * -ENOTDIR with why set when it is not ours alone. */
int owned_dir_open(const char *path, char why[OWNED_WHY_MAX]);

/* The whole content of dirfd/name, at most max_bytes. -ENOENT when there is
 * none; else why is set: -ELOOP (a symlink), -EINVAL (not a regular file),
 * -EPERM (another owner, or writable by others), -EFBIG. */
int owned_file_read(int dirfd, const char *name, size_t max_bytes, unsigned char **ret,
                    size_t *ret_len, char why[OWNED_WHY_MAX]);

/* Create dirfd/tmp_name for writing, exclusively (0600): what a crash left
 * there, or anything planted there, is removed first, never opened. */
int owned_file_create(int dirfd, const char *tmp_name);

/* Make fd, created as tmp_name, durable and put it in place as name
 * (replacing what was there). fd stays open. */
int owned_file_commit(int dirfd, int fd, const char *tmp_name, const char *name);

/* Rename dirfd/name to name.untrusted-TIME, for a post-mortem; aside gets
 * the new name. */
int owned_file_set_aside(int dirfd, const char *name, char *aside, size_t size);

#endif
