#!/bin/sh
# Installs (or removes) weir: the binary, the systemd units, the sysusers.d
# entry for the `weir` group, the documentation, the man pages and the
# shell completions (bash, zsh, fish).
#
#   packaging/install.sh [--prefix DIR] [--destdir DIR] [--binary FILE]
#   packaging/install.sh --uninstall [--prefix DIR] [--destdir DIR]
#
# --prefix   where to install (default /usr/local; a package uses /usr).
# --destdir  stage under this directory instead of the live system (for
#            packaging); nothing is then created or reloaded on the system:
#            the group comes from the staged sysusers.d file when the target
#            boots (or runs systemd-sysusers). A destdir of / is the live
#            system.
# --binary   install this weir binary instead of building one with
#            `cargo install --path crates/weir`. It must run here: it writes
#            the man pages and completions (`weir generate`).
#
# Running it again installs the same files again: it is idempotent. On the
# live system it also creates the `weir` group and reloads systemd. The
# uninstall stops and disables the units and removes the installed files;
# it keeps the group and the state (/var/lib/weir), which hold data.
set -eu

prefix=/usr/local
destdir=
binary=
uninstall=false

usage() {
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
    exit "${1:-0}"
}

while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
        --prefix=*) prefix=${1#*=}; shift ;;
        --destdir) destdir=${2:?--destdir needs a directory}; shift 2 ;;
        --destdir=*) destdir=${1#*=}; shift ;;
        --binary) binary=${2:?--binary needs a file}; shift 2 ;;
        --binary=*) binary=${1#*=}; shift ;;
        --uninstall) uninstall=true; shift ;;
        -h|--help) usage 0 ;;
        *) echo "install.sh: unknown option: $1" >&2; usage 2 >&2 ;;
    esac
done

case "$prefix" in
    /*) ;;
    *) echo "install.sh: --prefix must be absolute: $prefix" >&2; exit 2 ;;
esac
# A destdir that is the root itself is the live system: the group must be
# created and systemd reloaded then too.
if [ -n "$destdir" ] && [ "$(cd "$destdir" 2>/dev/null && pwd -P)" = / ]; then
    destdir=
fi

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
root="$destdir$prefix"
bindir="$root/bin"
unitdir="$root/lib/systemd/system"
sysusersdir="$root/lib/sysusers.d"
docdir="$root/share/doc/weir"
mandir="$root/share/man/man1"
bashdir="$root/share/bash-completion/completions"
zshdir="$root/share/zsh/site-functions"
fishdir="$root/share/fish/vendor_completions.d"
# Only the live system gets a group and a daemon-reload.
live=false
[ -z "$destdir" ] && live=true
systemd_runs=false
[ -d /run/systemd/system ] && systemd_runs=true

say() { echo "install.sh: $*"; }

if $uninstall; then
    if $live && $systemd_runs; then
        systemctl disable --now weir.service weir.socket 2>/dev/null || true
    fi
    rm -f "$bindir/weir" "$unitdir/weir.service" "$unitdir/weir.socket" \
        "$sysusersdir/weir.conf"
    rm -rf "$docdir"
    rm -f "$mandir"/weir.1 "$mandir"/weir-*.1 "$bashdir/weir" "$zshdir/_weir" \
        "$fishdir/weir.fish"
    if $live && $systemd_runs; then
        systemctl daemon-reload
    fi
    say "removed weir from $root (kept the weir group and /var/lib/weir)"
    exit 0
fi

if [ -z "$binary" ]; then
    build=$(mktemp -d)
    trap 'rm -rf "$build"' EXIT
    say "building with cargo install --path $repo/crates/weir"
    cargo install --locked --quiet --path "$repo/crates/weir" --root "$build"
    binary="$build/bin/weir"
fi
[ -x "$binary" ] || { echo "install.sh: not an executable: $binary" >&2; exit 1; }

install -D -m 0755 "$binary" "$bindir/weir"
# The units name the binary and the documentation where this prefix puts
# them.
install -d -m 0755 "$unitdir"
for unit in weir.service weir.socket; do
    sed -e "s|^ExecStart=/usr/bin/weir |ExecStart=$prefix/bin/weir |" \
        -e "s|^Documentation=file:///usr/share/doc/weir/|Documentation=file://$prefix/share/doc/weir/|" \
        "$here/systemd/$unit" > "$unitdir/$unit.tmp"
    chmod 0644 "$unitdir/$unit.tmp"
    mv "$unitdir/$unit.tmp" "$unitdir/$unit"
done
install -D -m 0644 "$here/sysusers.d/weir.conf" "$sysusersdir/weir.conf"
install -d -m 0755 "$docdir"
install -m 0644 "$repo/README.md" "$here/weir.toml" "$docdir/"
for doc in "$repo"/docs/*.md "$repo"/docs/openapi.yaml; do
    [ -f "$doc" ] && install -m 0644 "$doc" "$docdir/"
done
# Man pages and completions, written by the binary from its own command
# line definition. Pages of commands that no longer exist go first.
rm -f "$mandir"/weir.1 "$mandir"/weir-*.1
"$binary" generate man "$mandir"
chmod 0644 "$mandir"/weir*.1
"$binary" generate completions bash "$bashdir"
"$binary" generate completions zsh "$zshdir"
"$binary" generate completions fish "$fishdir"
chmod 0644 "$bashdir/weir" "$zshdir/_weir" "$fishdir/weir.fish"

if $live; then
    if command -v systemd-sysusers >/dev/null 2>&1; then
        systemd-sysusers "$sysusersdir/weir.conf"
    elif ! getent group weir >/dev/null 2>&1; then
        if command -v groupadd >/dev/null 2>&1; then
            groupadd --system weir
        else
            addgroup --system weir
        fi
    fi
    if $systemd_runs; then
        systemctl daemon-reload
    fi
fi
say "installed weir in $root"
if ! $live; then
    say "staged only: the target needs the weir group (systemd-sysusers creates it from lib/sysusers.d/weir.conf at boot, or run it once)"
fi
if $live; then
    say "start it with: systemctl enable --now weir.service (and weir.socket for socket activation)"
fi
