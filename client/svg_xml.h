/* SPDX-License-Identifier: GPL-2.0-only */
/* Text inside offcpuctl's SVGs. */
#ifndef SVG_XML_H
#define SVG_XML_H

#include <stdio.h>

/* s as XML character data: markup escaped, and control characters (XML 1.0
 * forbids most; a thread may name itself anything) escaped as names are
 * (name_escape.h), so the SVG is valid UTF-8 XML. */
void svg_put_text(FILE *f, const char *s);

/* The same for the first len bytes of s. */
void svg_put_textn(FILE *f, const char *s, size_t len);

#endif
