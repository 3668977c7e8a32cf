/* SPDX-License-Identifier: GPL-2.0-only */
#include "svg_xml.h"

#include <string.h>

void svg_put_text(FILE *f, const char *s)
{
    svg_put_textn(f, s, strlen(s));
}

void svg_put_textn(FILE *f, const char *s, size_t len)
{
    for (const char *end = s + len; s < end; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '&')
            fputs("&amp;", f);
        else if (c == '<')
            fputs("&lt;", f);
        else if (c == '>')
            fputs("&gt;", f);
        else if (c == '"')
            fputs("&quot;", f);
        else if (c < 0x20 && c != '\t')
            fputc('?', f);
        else
            fputc(c, f);
    }
}
