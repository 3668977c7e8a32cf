#!/usr/bin/env python3
"""Embed the Varlink interface definition as a C string (for GetInterfaceDescription)."""
import sys

src, dst = sys.argv[1], sys.argv[2]
text = open(src, encoding="utf-8").read()
escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n\"\n    \"")
with open(dst, "w", encoding="utf-8") as out:
    out.write("/* Generated from io.offcpud.varlink: edit that file, not this one. */\n")
    out.write("const char offcpud_interface_description[] =\n    \"" + escaped + "\";\n")
