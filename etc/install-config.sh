#!/bin/sh
# meson install: install $1 as $2 (under $DESTDIR) unless a file is there
# already; $3 is where the shipped copy is kept for comparison.
set -eu
src=$1
dest=${DESTDIR:-}$2
if [ -e "$dest" ]; then
    [ -n "${MESON_INSTALL_QUIET:-}" ] || echo "Keeping $dest: it exists (the shipped one is $3)"
    exit 0
fi
install -D -m 0644 "$src" "$dest"
[ -n "${MESON_INSTALL_QUIET:-}" ] || echo "Installing $src to $dest"
