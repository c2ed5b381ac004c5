#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Run the cargo-fuzz targets (fuzz/) for SECONDS each (default 60).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      targets: analyze apply
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). cargo-fuzz wants a nightly
# compiler for -Zsanitizer and -Cpasses; on a stable toolchain the script
# sets RUSTC_BOOTSTRAP=1, which unlocks those flags on stable rustc.
# The seed corpus (the test fixtures of every arch and testdata/zwm_test.ko,
# plain and signed) is generated on the first run. Crashes land in
# fuzz/artifacts/TARGET/; make each one a regression test in tests/mutation.rs.
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-analyze apply}

# POSIX sh (dash) has no [[ ]]: a case keeps the script /bin/sh.
case $(rustc --version) in
	*nightly*) ;;
	*) export RUSTC_BOOTSTRAP=1;;
esac
# Debug assertions on (overflow checks find what release would wrap).
for t in $targets; do
	corpus=fuzz/corpus/$t
	if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
		cargo run -q --manifest-path fuzz/Cargo.toml --example seeds -- "$corpus"
	fi
	# -rss_limit_mb: an allocation sized from an unvalidated field shows up
	# as an out-of-memory crash rather than passing unnoticed.
	cargo fuzz run --debug-assertions "$t" "$corpus" -- \
		-max_total_time="$secs" -rss_limit_mb=1024 -print_final_stats=1
done
