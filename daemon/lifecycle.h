/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The running daemon: its event loop (a drain every interval, the watchdog,
 * announcements from the BPF side, signals) until SIGTERM, and reloads of
 * its configuration on SIGHUP.
 */
#ifndef LIFECYCLE_H
#define LIFECYCLE_H

#include "daemon.h"

/* Make the settings in d->cfg that can change live take effect: who may
 * read, the server's limits, the socket file's group. */
void lifecycle_apply_settings(struct daemon *d);

/* Serve until told to stop; then tell systemd it is stopping. */
int lifecycle_run(struct daemon *d);

#endif
