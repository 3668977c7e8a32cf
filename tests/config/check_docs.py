#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Holds etc/offcpud.conf, offcpud.conf(5) and offcpud(8) against the table of
configuration keys (daemon/config/config.c), the one home of each key's default.

Usage: check_docs.py CONFIG_KEYS offcpud.conf offcpud.conf.5 offcpud.8
CONFIG_KEYS prints the table, "name<TAB>default" a line. Every disagreement is
one line; the exit status is 1 if there is any."""
import re
import shlex
import subprocess
import sys

ESCAPES = [(r"\-", "-"), (r"\(en", "-"), (r"\(em", "-"), (r"\~", " "), (r"\|", ""), (r"\&", "")]
ALTERNATING = {"BR", "IR", "BI", "RB", "IB", "RI"}
BREAKS = {"TP", "SS", "SH", "PP", "P", "LP", "IP"}


def table(program):
    out = subprocess.run([program], check=True, capture_output=True, text=True).stdout
    return dict(line.split("\t", 1) for line in out.splitlines())


def roff_lines(path):
    """The page as (macro or None, text) pairs, escapes and fonts undone."""
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith('.\\"'):
            continue
        for esc, plain in ESCAPES:
            line = line.replace(esc, plain)
        line = re.sub(r"\\f[BIRP]", "", line)
        if not line.startswith("."):
            yield None, line
            continue
        words = line[1:].split(None, 1)
        macro, args = (words[0], words[1] if len(words) > 1 else "") if words else ("", "")
        try:
            args = shlex.split(args)
        except ValueError:
            args = args.split()
        yield macro, ("" if macro in ALTERNATING else " ").join(args) if macro not in BREAKS else ""


def items(path):
    """Each .TP item of the page as (tag, body)."""
    tag, body, after_tp = None, [], False
    for macro, text in roff_lines(path):
        if macro in BREAKS:
            if tag is not None:
                yield tag, "\n".join(body)
            tag, body, after_tp = None, [], macro == "TP"
        elif after_tp:
            tag, after_tp = text, False
        elif tag is not None:
            body.append(text)
    if tag is not None:
        yield tag, "\n".join(body)


def stated_default(body):
    """The default an item states: its first word, or for a default an
    environment variable sets, the path it falls back to. None: not stated."""
    m = re.search(r"(?:\bDefault:|\(default:?|;\s*default\b)\s*(.*)", body, re.S)
    if not m:
        return None
    words = [w.strip(",.;:()") for w in m.group(1).split()]
    if words and words[0].startswith("$"):
        words = [w for w in words if w.startswith("/")]
    if not words:
        return None
    return "" if words[0] == "empty" else words[0]


def check_page(path, keys, key_of_tag, every_key):
    errors, seen = [], set()
    for tag, body in items(path):
        key = key_of_tag(tag)
        if key is None:
            continue
        if key not in keys:
            errors.append(f"{path}: {key} is no configuration key")
            continue
        seen.add(key)
        said = stated_default(body)
        if said != keys[key]:
            errors.append(f"{path}: {key}: the page says default {said!r}, "
                          f"the table {keys[key]!r}")
    if every_key:
        errors += [f"{path}: {k} is not described" for k in keys if k not in seen]
    return errors


def conf_key(tag):
    m = re.fullmatch(r"([a-z][a-z-]*) = .*", tag)
    return m.group(1) if m else None


def option_key(tag):
    m = re.search(r"--([a-z][a-z-]*)", tag)
    return m.group(1) if m and m.group(1) not in ("config", "help", "version") else None


def check_conf(path, keys):
    errors, seen = [], set()
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        m = re.fullmatch(r"#?([a-z][a-z-]*) =(.*)", line.rstrip("\n"))
        if not m:
            continue
        key, value = m.group(1), m.group(2).strip()
        if key not in keys:
            errors.append(f"{path}:{n}: {key} is no configuration key")
        elif value != keys[key]:
            errors.append(f"{path}:{n}: {key} = {value!r}, the table's default is {keys[key]!r}")
        seen.add(key)
    return errors + [f"{path}: {k} is not shown" for k in keys if k not in seen]


def main(program, conf, page5, page8):
    keys = table(program)
    errors = (check_conf(conf, keys) + check_page(page5, keys, conf_key, True) +
              check_page(page8, keys, option_key, False))
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
