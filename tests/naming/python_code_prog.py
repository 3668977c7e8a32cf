# SPDX-License-Identifier: GPL-2.0-only
# For test_python_code.c: code objects of every kind, and what CPython itself
# says of them. Prints, per code object, its address (CPython's id), its
# instructions' count, first line, qualified name and file (UTF-8, hex), and
# the line of every instruction (co_lines: what PyCode_Addr2Line gives; -1 for
# none, and for all of a location table longer than the daemon keeps); then
# the location-table entry codes its tables hold, objects that are no code,
# two code objects to change, and "ready"; then changes those as told on stdin
# until it closes, all code kept alive.
import ctypes
import os
import shutil
import sys
import tempfile
import types


class Greeter:
    def hello(self, who):
        return f"hello {who}"


def chain():
    def inner(x):
        return x + 1
    return inner


def counter(n):
    i = 0
    while i < n:
        yield i
        i += 1


square = lambda x: x * x  # noqa: E731


def guarded(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None
    finally:
        path = None


# A module in a file with a non-ASCII path: names in Latin-1, UCS-2 and UCS-4,
# one longer than the daemon keeps, and a function whose lines are far apart
# and whose expressions span lines and reach far columns: long-form entries,
# varints of several chunks, negative line deltas; a name at column 76 (the
# last short form).
FAR = "\n" * 100
ARGS = "".join(f"        {i},\n" for i in range(40))
SOURCE = (
    "def ñandú(x):\n"
    "    return 1 +" + " " * 62 + "x\n"
    "\n"
    "def ñandú_λ(x):\n"
    "    return [y\n"
    "            for y in range(x)]\n"
    "\n"
    "def 𠀀_λ():\n"
    "    return 1\n"
    "\n"
    "def " + "λ" * 200 + "():\n"
    "    return 2\n"
    "\n"
    "def far_apart(a, b):\n"
    "    total = a\n" + FAR +
    "    total += b" + " " * 150 + "+ a\n"
    "    result = max(\n"
    "        total,\n" + ARGS +
    "        0)\n" + FAR +
    "    return result\n"
)

# A function whose location table is over what the daemon keeps of one
# (64 KiB): named, with no lines.
HUGE_LINES = 20000
SOURCE += "\ndef huge():\n" + "    x = 1\n" * HUGE_LINES
LINETABLE_MAX = 64 << 10

tmp = tempfile.mkdtemp(prefix="offcpud-ñandú-")
path = os.path.join(tmp, "módulo_λ_𠀀.py")
with open(path, "w", encoding="utf-8") as f:
    f.write(SOURCE)
with open(path, encoding="utf-8") as f:
    module_code = compile(f.read(), path, "exec")
namespace = {}
exec(module_code, namespace)


def walk(code, out):
    out.append(code)
    for k in code.co_consts:
        if isinstance(k, types.CodeType):
            walk(k, out)
    return out


def hexname(s):
    return s.encode("utf-8", "surrogatepass").hex()


codes = walk(sys._getframe().f_code, []) + walk(module_code, [])
entry_codes = set()
print("pid", os.getpid())
for code in codes:
    units = len(code.co_code) // 2
    lines = [-1] * units
    for start, end, line in code.co_lines():
        for offset in range(start, end, 2):
            lines[offset // 2] = -1 if line is None else line
    if len(code.co_linetable) > LINETABLE_MAX:
        lines = [-1] * units
    for b in code.co_linetable:
        if b & 0x80:
            entry_codes.add((b >> 3) & 15)
    print("code", id(code), units, code.co_firstlineno, hexname(code.co_qualname),
          hexname(code.co_filename), *lines)
print("entry_codes", *sorted(entry_codes))
not_code = ("a str that is no code", {"a": "dict"}, chain)
for obj in not_code:
    print("other", id(obj))

# Two code objects the process changes when told, as a freed one whose memory
# is used again would be: "rename" points the first's co_qualname at another
# str, "retype" makes the second's ob_type a dict's. Neither is ever run; the
# process ends with os._exit, so that nothing frees what was changed.
changed = compile("x = 1", "changed.py", "exec")
freed = compile("y = 2", "freed.py", "exec")
new_name = "renamed_λ"
print("changed", id(changed))
print("freed", id(freed))
print("ready", flush=True)
for command in sys.stdin:
    if command == "rename\n":
        ctypes.c_void_p.from_address(id(changed) + 0x80).value = id(new_name)
    elif command == "retype\n":
        ctypes.c_void_p.from_address(id(freed) + 0x8).value = id(dict)
    print("done", flush=True)
shutil.rmtree(tmp)
sys.stdout.flush()
os._exit(0)
