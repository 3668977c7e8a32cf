/* SPDX-License-Identifier: GPL-2.0-only */
/* Text inside offcpuctl's SVGs. */
#ifndef SVG_XML_H
#define SVG_XML_H

#include <stdio.h>

/* s as XML character data: markup escaped, and the control characters XML
 * 1.0 forbids (a thread may name itself anything) shown as '?'. */
void svg_put_text(FILE *f, const char *s);

/* The same for the first len bytes of s. */
void svg_put_textn(FILE *f, const char *s, size_t len);

#endif
