#!/usr/bin/env bash
# The whole test suite, as the README gives it. It installs the system
# packages the privileged tests need when they are missing (as root, through
# apt), then runs every test of the workspace. Run as root to run the
# privileged tests; without root they say why they skip.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v mkfs.btrfs >/dev/null || need+=(btrfs-progs)
command -v pvcreate >/dev/null || need+=(lvm2)
command -v filefrag >/dev/null || need+=(e2fsprogs)
command -v unshare >/dev/null || need+=(util-linux)
command -v setpriv >/dev/null || need+=(util-linux)
command -v findmnt >/dev/null || need+=(util-linux)
command -v losetup >/dev/null || need+=(mount)
command -v systemd-socket-activate >/dev/null || need+=(systemd)
if ((${#need[@]})); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "test.sh: installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "test.sh: missing ${need[*]}; the tests that need them will skip" >&2
  fi
fi

# Every test binary runs even after a failure, so that the total at the end
# counts them all; the output is kept for that total.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
cargo test --workspace --all-targets --locked --no-fail-fast 2>&1 | tee "$out" || status=$?
# The fail point tests stop a writer at an exact place in weir-log; the
# feature that compiles those points in stays off in every other build.
cargo test -p weir-log --features failpoints --test failpoints --locked 2>&1 | tee -a "$out" || status=$?
echo
awk -f scripts/test-summary.awk "$out" || status=1
exit "$status"
