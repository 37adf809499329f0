#!/usr/bin/env bash
# Runs every cargo-fuzz target for N seconds each (default 30). Needs the
# nightly toolchain; installs cargo-fuzz from crates.io when missing. A crash
# fails the run and leaves the input under fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-30}
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "fuzz.sh: no nightly toolchain here; skipping the fuzz targets" >&2
  exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
for t in $(cargo +nightly fuzz list); do
  mkdir -p "corpus/$t"
  echo "== fuzz $t (${secs}s)"
  log=$(mktemp)
  status=0
  cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -print_final_stats=1 >"$log" 2>&1 || status=$?
  grep -E '^stat::(number_of_executed_units|peak_rss_mb)|SUMMARY|panicked|ERROR' "$log" || true
  if [[ $status -ne 0 ]]; then
    tail -n 40 "$log"
    rm -f "$log"
    echo "fuzz.sh: $t failed" >&2
    exit 1
  fi
  rm -f "$log"
done
