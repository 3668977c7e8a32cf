/* SPDX-License-Identifier: GPL-2.0-only */
#include "svg_xml.h"

#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "name_escape.h"

void svg_put_text(FILE *f, const char *s)
{
    svg_put_textn(f, s, strlen(s));
}

void svg_put_textn(FILE *f, const char *s, size_t len)
{
    _cleanup_free_ char *part = strndup(s, len);
    _cleanup_free_ char *text = part ? name_escape(part, NAME_ESCAPE_CONTROL) : NULL;

    for (const char *p = text ?: "?"; *p; p++) {
        if (*p == '&')
            fputs("&amp;", f);
        else if (*p == '<')
            fputs("&lt;", f);
        else if (*p == '>')
            fputs("&gt;", f);
        else if (*p == '"')
            fputs("&quot;", f);
        else
            fputc(*p, f);
    }
}
