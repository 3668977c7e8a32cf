/* SPDX-License-Identifier: GPL-2.0-only */
/* TCP addresses as a configuration file writes them. */
#ifndef INET_ADDRESS_H
#define INET_ADDRESS_H

#include <sys/socket.h>

/* Parse "ADDRESS:PORT" ("127.0.0.1:9572", "[::1]:9572", "*:9572" or ":9572"
 * for every address). Returns 0 or -EINVAL. */
int inet_address_parse(const char *text, struct sockaddr_storage *ret, socklen_t *ret_len);

#endif
