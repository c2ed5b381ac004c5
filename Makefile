# The commands a developer and CI need. `make check` is what .ci/run runs.
.PHONY: all demo test integration e2e e2e-clang kernel-e2e kernel-e2e-ppc64le kernel-bench kernel-bench-amdgpu check bench fuzz

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

# Not part of check: the series on ppc64le, cross-built with gcc; the build
# alone takes most of an hour on 2 cores (docs/kernel-e2e.md).
kernel-e2e-ppc64le: all
	scripts/kernel-e2e-ppc64le.sh

# Not part of check: kvm.ko built with clang against kernels built with
# clang, x86_64 and ppc64le; each builds a kernel first (docs/e2e.md).
e2e-clang: all
	scripts/e2e.sh --cases clang-amd64,clang-ppc64el

# Not part of check: five kernels side by side (docs/kernel-bench.md).
kernel-bench: all
	scripts/kernel-bench.sh

kernel-bench-amdgpu: all
	scripts/kernel-bench.sh --amdgpu

check: test integration e2e kernel-e2e

bench: all
	scripts/bench.sh

fuzz:
	scripts/fuzz.sh 60
