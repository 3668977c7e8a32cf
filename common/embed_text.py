#!/usr/bin/env python3
"""Embed a text file as a C string: embed_text.py SRC DST NAME writes DST with
`const char NAME[]` holding SRC (the Varlink interface for GetInterfaceDescription,
the flame graph's script for its SVGs)."""
import os
import sys

src, dst, name = sys.argv[1:4]
text = open(src, encoding="utf-8").read()
escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n\"\n    \"")
with open(dst, "w", encoding="utf-8") as out:
    out.write(f"/* Generated from {os.path.basename(src)}: edit that file, not this one. */\n")
    out.write(f"const char {name}[] =\n    \"" + escaped + "\";\n")
