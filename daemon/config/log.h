/* SPDX-License-Identifier: GPL-2.0-only */
/* Log lines on stderr; under systemd they carry a syslog priority prefix. */
#ifndef LOG_H
#define LOG_H

#include <syslog.h>

void log_setup(void);
void log_msg(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...)   log_msg(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...)  log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)    log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)   log_msg(LOG_DEBUG, __VA_ARGS__)

/* Log and return -errno, for "return log_error_errno(r, ...)" in callers. */
#define log_error_errno(err, ...) (log_msg(LOG_ERR, __VA_ARGS__), -abs(err))

#endif
