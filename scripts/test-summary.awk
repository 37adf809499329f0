#!/usr/bin/awk -f
# Sums the "test result:" lines of `cargo test` output into one line, and
# names the failed tests, so that a run of a hundred test binaries ends
# with its total instead of the last binary's count. Exits 1 if any test
# failed or no test result was seen (a build that failed runs no test).
/^test result: / {
  binaries++
  passed += $4; failed += $6; ignored += $8
}
/^test .* \.\.\. FAILED$/ {
  sub(/^test /, ""); sub(/ \.\.\. FAILED$/, "")
  names[++nfailed] = $0
}
END {
  for (k = 1; k <= nfailed; k++) print "failed: " names[k]
  printf "total: %d passed, %d failed, %d ignored, in %d test binaries\n", passed, failed, ignored, binaries
  exit (failed > 0 || binaries == 0) ? 1 : 0
}
