#!/usr/bin/env bash
# The whole test suite, as the README gives it. It installs the system
# packages the privileged tests need when they are missing (as root, through
# apt), then runs every test of the workspace. Run as root to run the
# privileged tests; without root they say why they skip.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v mkfs.btrfs >/dev/null || need+=(btrfs-progs)
command -v mkfs.xfs >/dev/null || need+=(xfsprogs)
command -v mkfs.vfat >/dev/null || need+=(dosfstools)
command -v blkid >/dev/null || need+=(util-linux)
command -v pvcreate >/dev/null || need+=(lvm2)
command -v filefrag >/dev/null || need+=(e2fsprogs)
command -v unshare >/dev/null || need+=(util-linux)
command -v setpriv >/dev/null || need+=(util-linux)
command -v findmnt >/dev/null || need+=(util-linux)
command -v losetup >/dev/null || need+=(mount)
command -v systemd-socket-activate >/dev/null || need+=(systemd)
command -v ip >/dev/null || need+=(iproute2)
command -v java >/dev/null || need+=(default-jre-headless)
command -v mvn >/dev/null || need+=(maven)
# The Kafka client's TLS links the system's OpenSSL; the TLS tests make
# their certificates with its command.
command -v pkg-config >/dev/null || need+=(pkg-config)
pkg-config --exists openssl 2>/dev/null || need+=(libssl-dev)
command -v openssl >/dev/null || need+=(openssl)
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

# A real nats-server for weir-ship's NATS tests, built by `go install` into
# Go's bin directory. A fresh machine fills Go's module and build caches
# once; later runs find the binary and build nothing. Once the server is
# here the tests must not skip: WEIR_REQUIRE_BROKERS makes a missing one
# fail them.
nats_version=v2.15.2
if [[ -z ${WEIR_NATS_SERVER:-} ]]; then
  if command -v go >/dev/null; then
    nats_bin=$(go env GOPATH)/bin/nats-server
    if ! [[ -x $nats_bin ]] || ! "$nats_bin" --version | grep -qF "$nats_version"; then
      echo "test.sh: installing nats-server $nats_version"
      if ! go install "github.com/nats-io/nats-server/v2@$nats_version"; then
        echo "test.sh: go install nats-server failed" >&2
        status=1
      fi
    fi
    if [[ -x $nats_bin ]]; then
      export WEIR_NATS_SERVER=$nats_bin
    fi
  else
    echo "test.sh: no go to build nats-server; the NATS tests will skip" >&2
  fi
fi
# A real Kafka (4.4, KRaft) for weir-ship's Kafka tests: its jars from
# Maven Central, copied once into a cache directory (Maven keeps them in
# ~/.m2 as well); the tests start it with java.
kafka_version=4.4.0
if [[ -z ${WEIR_KAFKA_LIB:-} ]]; then
  kafka_lib=${XDG_CACHE_HOME:-$HOME/.cache}/weir/kafka-$kafka_version/lib
  if ! [[ -f $kafka_lib/kafka_2.13-$kafka_version.jar ]]; then
    if command -v mvn >/dev/null && command -v java >/dev/null; then
      echo "test.sh: fetching Kafka $kafka_version's jars"
      rm -rf "$kafka_lib"
      if ! mvn -q -B -f scripts/kafka/pom.xml dependency:copy-dependencies \
        -DoutputDirectory="$kafka_lib"; then
        echo "test.sh: fetching Kafka's jars failed" >&2
        status=1
      fi
    else
      echo "test.sh: no java or mvn; the Kafka tests will skip" >&2
    fi
  fi
  if [[ -f $kafka_lib/kafka_2.13-$kafka_version.jar ]]; then
    export WEIR_KAFKA_LIB=$kafka_lib
  fi
fi
if [[ -n ${WEIR_NATS_SERVER:-} && -n ${WEIR_KAFKA_LIB:-} ]]; then
  export WEIR_REQUIRE_BROKERS=1
fi

# The Debian package, built here so that crates/weir/tests/deb_package.rs
# can install it (into a throwaway overlay) through $WEIR_TEST_DEB. It
# needs the release binary, which .ci/run's later release build reuses, so
# CI pays for the package itself only (seconds). cargo-deb is pinned: its
# flags and generated maintainer scripts change between versions. Without
# root or dpkg the test cannot install anything, so nothing is built; as
# root with dpkg, failing to get cargo-deb or to build fails the run, so
# that the test cannot quietly stop running.
cargo_deb_version=3.8.0
target=${CARGO_TARGET_DIR:-target}
deb_skip=
if [[ $(id -u) -ne 0 ]]; then
  deb_skip="not root"
elif ! command -v dpkg >/dev/null; then
  deb_skip="dpkg is not installed"
elif ! cargo deb --version >/dev/null 2>&1; then
  echo "test.sh: installing cargo-deb $cargo_deb_version"
  # Built in a temporary directory, not in this workspace's target.
  if ! env -u CARGO_TARGET_DIR cargo install cargo-deb --version "$cargo_deb_version" --locked --quiet; then
    deb_skip="cargo install cargo-deb failed"
    status=1
  fi
fi
if [[ -z $deb_skip ]]; then
  # cargo-deb finds target/release/weir through CARGO_TARGET_DIR too;
  # --output keeps the package's path known whatever the version.
  if cargo build --release --locked -p weir &&
    packaging/generate.sh --binary "$target/release/weir" &&
    cargo deb -p weir --no-build --locked --fast --output "$target/debian/weir.deb"; then
    WEIR_TEST_DEB=$(cd "$target/debian" && pwd)/weir.deb
    export WEIR_TEST_DEB
  else
    echo "test.sh: building the Debian package failed" >&2
    status=1
  fi
else
  echo "test.sh: $deb_skip; the Debian package is not built and its test skips" >&2
fi

cargo test --workspace --all-targets --locked --no-fail-fast 2>&1 | tee "$out" || status=$?
# The fail point tests stop a writer at an exact place in weir-log; the
# feature that compiles those points in stays off in every other build.
cargo test -p weir-log --features failpoints --test failpoints --locked 2>&1 | tee -a "$out" || status=$?
echo
awk -f scripts/test-summary.awk "$out" || status=1
exit "$status"
