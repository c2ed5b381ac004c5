# The commands a developer and CI need. `make check` is what .ci/run runs.
.PHONY: all demo test integration e2e kernel-e2e kernel-bench kernel-bench-amdgpu tree-check check bench fuzz adjust-first-demo

all:
	cargo build --release

demo: all
	target/release/zero-weak-mcount -v -o target/zwm_test.ko testdata/zwm_test.ko

test:
	cargo test

integration: all
	scripts/integration-test.sh

e2e: all
	scripts/e2e.sh

kernel-e2e: all
	scripts/kernel-e2e.sh

# Not part of check: five kernels side by side (docs/kernel-bench.md).
kernel-bench: all
	scripts/kernel-bench.sh

kernel-bench-amdgpu: all
	scripts/kernel-bench.sh --amdgpu

# Not part of check: what the zero-first gate prevents (docs/rules.md).
adjust-first-demo:
	scripts/adjust-first-demo.sh

# Not part of check: --check over seven whole Debian module trees, with and
# without their config (docs/trees.md); a cold cache downloads about 1 GB.
tree-check: all
	scripts/tree-check.sh

check: test integration e2e kernel-e2e

bench: all
	scripts/bench.sh

fuzz:
	scripts/fuzz.sh 60
