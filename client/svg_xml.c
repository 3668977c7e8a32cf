/* SPDX-License-Identifier: GPL-2.0-only */
#include "svg_xml.h"

void svg_put_text(FILE *f, const char *s)
{
    for (; *s; s++) {
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
