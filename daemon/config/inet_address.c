/* SPDX-License-Identifier: GPL-2.0-only */
#include "inet_address.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int inet_address_parse(const char *text, struct sockaddr_storage *ret, socklen_t *ret_len)
{
    struct sockaddr_in *in4 = (struct sockaddr_in *)ret;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ret;
    const char *colon = strrchr(text, ':');
    char host[INET6_ADDRSTRLEN + 2];
    size_t hlen;
    char *end;
    unsigned long port;

    if (!colon)
        return -EINVAL;
    errno = 0;
    port = strtoul(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1 || port == 0 || port > 65535)
        return -EINVAL;
    hlen = colon - text;
    if (hlen >= sizeof(host))
        return -EINVAL;
    memcpy(host, text, hlen);
    host[hlen] = '\0';
    memset(ret, 0, sizeof(*ret));
    if (hlen == 0 || strcmp(host, "*") == 0) {
        in4->sin_family = AF_INET;
        in4->sin_addr.s_addr = htonl(INADDR_ANY);
        in4->sin_port = htons(port);
        *ret_len = sizeof(*in4);
        return 0;
    }
    if (host[0] == '[' && host[hlen - 1] == ']') {
        host[hlen - 1] = '\0';
        if (inet_pton(AF_INET6, host + 1, &in6->sin6_addr) != 1)
            return -EINVAL;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        *ret_len = sizeof(*in6);
        return 0;
    }
    if (inet_pton(AF_INET, host, &in4->sin_addr) != 1)
        return -EINVAL;
    in4->sin_family = AF_INET;
    in4->sin_port = htons(port);
    *ret_len = sizeof(*in4);
    return 0;
}
