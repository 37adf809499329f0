#!/bin/sh
# Writes the man pages and shell completions that the Debian package ships
# into packaging/generated/ (ignored by git), from a release build of weir.
# Run it before `cargo deb -p weir`, which only collects files:
#
#   packaging/generate.sh [--binary FILE] && cargo deb -p weir
#
# --binary   use this weir binary instead of building the release one.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
binary=
case "${1:-}" in
    --binary) binary=${2:?--binary needs a file} ;;
    --binary=*) binary=${1#*=} ;;
    "") ;;
    *) echo "generate.sh: unknown option: $1" >&2; exit 2 ;;
esac

if [ -z "$binary" ]; then
    (cd "$repo" && cargo build --release --locked -p weir)
    binary="${CARGO_TARGET_DIR:-$repo/target}/release/weir"
fi
out="$here/generated"
# Pages of commands that no longer exist must not linger.
rm -rf "$out"
"$binary" generate man "$out/man"
for shell in bash zsh fish; do
    "$binary" generate completions "$shell" "$out/completions"
done
echo "generate.sh: wrote $out"
