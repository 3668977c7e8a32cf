/* SPDX-License-Identifier: GPL-2.0-only */
#include "frame_names.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "macro.h"

/* Names longer than the buffer are cut. */
__attribute__((format(printf, 3, 4))) static void write_name(char *buf, size_t size,
                                                             const char *fmt, ...)
{
    va_list ap;

    if (size == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

/* C++ (_Z) and Rust (legacy _ZN...17h<hash>E, and v0 _R) names as people
 * read them; libiberty is GCC's own demangler, and knows all three. */
void frame_name_symbol(char *buf, size_t size, const char *symbol)
{
    _cleanup_free_ char *demangled = NULL;

    if (symbol[0] == '_' && (symbol[1] == 'Z' || symbol[1] == 'R'))
        demangled = cplus_demangle(symbol, DMGL_PARAMS | DMGL_ANSI);
    write_name(buf, size, "%s", demangled ?: symbol);
}

void frame_name_inlined(char *buf, size_t size, const char *inlined, const char *symbol)
{
    size_t len = strlen(inlined) + 1;

    frame_name_symbol(buf, size, symbol);
    if (len + strlen(buf) >= size)
        return;
    memmove(buf + len, buf, strlen(buf) + 1);
    memcpy(buf, inlined, len - 1);
    buf[len - 1] = FRAME_NAMES_SEP;
}

size_t frame_names_split(char *buf, const char **names, size_t max)
{
    size_t n = 0;

    for (char *p = buf, *sep;; p = sep + 1) {
        /* past max, the innermost go: shift the rest down */
        if (n == max) {
            memmove(names, names + 1, (max - 1) * sizeof(*names));
            n--;
        }
        names[n++] = p;
        sep = strchr(p, FRAME_NAMES_SEP);
        if (!sep)
            return n;
        *sep = '\0';
    }
}

void frame_name_in_file(char *buf, size_t size, const char *path, uint64_t offset)
{
    const char *slash = strrchr(path, '/');

    write_name(buf, size, "%s+0x%" PRIx64, slash ? slash + 1 : path, offset);
}

void frame_name_python(char *buf, size_t size, const char *qualname, const char *path, int32_t line)
{
    const char *slash = strrchr(path, '/');

    if (line > 0)
        write_name(buf, size, "%s (%s:%" PRId32 ")", qualname, slash ? slash + 1 : path, line);
    else
        write_name(buf, size, "%s (%s)", qualname, slash ? slash + 1 : path);
}

void frame_name_kernel(char *buf, size_t size, const char *function, const char *module)
{
    if (module)
        write_name(buf, size, "%s [%s]", function, module);
    else
        write_name(buf, size, "%s", function);
}

void frame_name_literal(char *buf, size_t size, const char *name)
{
    write_name(buf, size, "%s", name);
}

int frame_name_unknown(char *buf, size_t size, int error)
{
    frame_name_literal(buf, size, FRAME_NAME_UNKNOWN);
    return error;
}
