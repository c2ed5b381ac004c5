# SPDX-License-Identifier: GPL-2.0-only
# The commands a developer and CI need (`make check` is what .ci/run runs),
# and `make install` for packagers.
.PHONY: all build docs install clean uninstall demo test fresh-check deb-chroot integration e2e kernel-e2e kernel-e2e-7.3 \
	kernel-bench kernel-bench-amdgpu tree-check audit adjust-first-demo e2e-clang e2e-old kernel-e2e-ppc64le kbuild-btf \
	kernel-selftests kernel-selftests-aarch64 kernel-build-matrix kernel-debug probe-e2e dkms-abi check bench bench-quick fuzz lint

# Install locations. DESTDIR is prepended to every one of them.
# install-kbuild-hook finds the snippet at ../share/zero-weak-mcount from
# its own directory, so SBINDIR and DATADIR must share PREFIX.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
# The JSON report's format, which --help and the man page point to. Empty:
# not installed (the rpm spec lists it with %doc, in rpm's own doc dir).
DOCDIR ?= $(DATADIR)/doc/zero-weak-mcount
# rpm reads /usr/lib/rpm and its macros.d, and debhelper finds its add-ons
# in Perl's @INC: with PREFIX=/usr they land there (Perl's vendor dir,
# /usr/share/perl5 on Debian). Under another PREFIX they need these three
# set (README, "Building and installing").
RPMCONFIGDIR ?= $(PREFIX)/lib/rpm
RPMMACRODIR ?= $(RPMCONFIGDIR)/macros.d
PERL ?= perl
PERL5DIR ?= $(if $(filter /usr,$(PREFIX)),$(or $(shell $(PERL) -MConfig -e 'print $$Config{vendorlib}' 2>/dev/null),/usr/share/perl5),$(DATADIR)/perl5)
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/site-functions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d
# Debian's kernel hook directories: {header_,}postinst.d/50-zero-weak-mcount
# hooks each headers package as it (or its image) is installed, before
# DKMS's hooks there. Empty: not installed (the rpm spec uses file triggers).
KERNELHOOKDIR ?= /etc/kernel

# Packagers pass CARGO_FLAGS=--offline (or --frozen) for vendored builds.
CARGO ?= cargo
CARGO_FLAGS ?=
INSTALL ?= install
POD2MAN ?= pod2man
DOCS := target/docs
# Where cargo puts the binary: CARGO_TARGET_DIR and CARGO_BUILD_TARGET, as
# cargo itself reads them (debian/rules sets the target triple).
BIN := $(or $(CARGO_TARGET_DIR),target)/$(if $(CARGO_BUILD_TARGET),$(CARGO_BUILD_TARGET)/)release/zero-weak-mcount

all: build docs

build:
	$(CARGO) build --release $(CARGO_FLAGS)

# zero-weak-mcount(1) and the completions come from the clap definition
# (examples/gen-docs.rs); the other two pages from their POD. The example
# builds the crate with its dev-dependencies' features (object's "write"),
# so a --release run compiles the crate once more; in the dev profile it is
# what the README's `cargo test` built already. debian/rules, whose tests
# run with --release, sets GEN_DOCS_FLAGS=--release.
GEN_DOCS_FLAGS ?=
docs: build
	$(CARGO) run $(GEN_DOCS_FLAGS) $(CARGO_FLAGS) --example gen-docs -- $(DOCS)
	$(POD2MAN) --section=1 --center=Debhelper --release="zero-weak-mcount $(version)" \
		--name=DH_ZERO_WEAK_MCOUNT dist/dh_zero_weak_mcount $(DOCS)/dh_zero_weak_mcount.1
	$(POD2MAN) --section=8 --center="zero-weak-mcount" --release="zero-weak-mcount $(version)" \
		--name=INSTALL-KBUILD-HOOK docs/install-kbuild-hook.pod $(DOCS)/install-kbuild-hook.8

version = $(shell $(BIN) --version 2>/dev/null | cut -d' ' -f2)

# What `make` built, installed without running cargo (root may have none:
# rustup installs per user), the Kbuild step (Makefile.snippet, at the top
# level: it is what a kernel developer includes), and what ships beside it
# from dist/ (scripts/ is the test harness and installs nothing):
#   install-kbuild-hook      SBINDIR: wires the snippet into a kernel tree's
#                            scripts/Makefile.modfinal (install-kbuild-hook(8),
#                            from docs/install-kbuild-hook.pod)
#   kernel-header-hook       KERNELHOOKDIR/{header_,}postinst.d/50-zero-weak-mcount:
#                            runs the installer as Debian installs each headers
#                            or image package
#   brp-zero-weak-mcount     RPMCONFIGDIR: rpm's buildroot step
#   macros.zero-weak-mcount  RPMMACRODIR: the rpm macros, which name the tool
#                            and the brp step where this installs them
#   dh_zero_weak_mcount      BINDIR: the debhelper step (its man page is its POD)
#   zero_weak_mcount.pm      PERL5DIR/Debian/Debhelper/Sequence: the
#                            dh-sequence-zero-weak-mcount add-on, the step right
#                            after dh_strip
# The Debian maintainer scripts and the rpm file triggers that call the
# installer live where their tools want them: debian/zero-weak-mcount.* and
# zero-weak-mcount.spec. Tests: tests/scripts.rs, tests/wrappers.rs,
# debian/tests/, make integration, make dkms-abi.
# Completions: the tool's and the two scripts' (examples/gen-docs.rs).
COMPLETE := zero-weak-mcount install-kbuild-hook dh_zero_weak_mcount
# The directories it installs into; every one it has to create is listed in
# $(CREATED), so that make uninstall removes those (and only those) once
# empty, whatever DESTDIR and PREFIX were.
DIRS := $(BINDIR) $(SBINDIR) $(DATADIR)/zero-weak-mcount $(RPMCONFIGDIR) $(RPMMACRODIR) \
	$(PERL5DIR)/Debian/Debhelper/Sequence $(MANDIR)/man1 $(MANDIR)/man8 $(BASHCOMPDIR) $(ZSHCOMPDIR) $(FISHCOMPDIR) \
	$(DOCDIR) $(if $(KERNELHOOKDIR),$(KERNELHOOKDIR)/header_postinst.d $(KERNELHOOKDIR)/postinst.d)
CREATED := $(DOCS)/.install-dirs
BUILT := $(BIN) $(DOCS)/zero-weak-mcount.1 $(DOCS)/dh_zero_weak_mcount.1 $(DOCS)/install-kbuild-hook.8 \
	$(foreach n,$(COMPLETE),$(DOCS)/completions/$(n).bash $(DOCS)/completions/_$(n) $(DOCS)/completions/$(n).fish)
install:
	@for f in $(BUILT); do \
		[ -f "$$f" ] || { echo "make install: $$f is missing: run make first (make install runs no cargo)" >&2; exit 1; }; \
	done
	@for d in $(addprefix $(DESTDIR),$(DIRS)); do \
		while [ ! -d "$$d" ]; do echo "$$d"; d=$$(dirname "$$d"); done; \
	done >>$(CREATED)
	$(INSTALL) -d $(addprefix $(DESTDIR),$(DIRS))
	$(INSTALL) -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/
	$(INSTALL) -m 0755 dist/install-kbuild-hook $(DESTDIR)$(SBINDIR)/
	$(INSTALL) -m 0644 Makefile.snippet $(DESTDIR)$(DATADIR)/zero-weak-mcount/
	$(INSTALL) -m 0755 dist/brp-zero-weak-mcount $(DESTDIR)$(RPMCONFIGDIR)/
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@RPMCONFIGDIR@|$(RPMCONFIGDIR)|g' dist/macros.zero-weak-mcount \
		>$(DESTDIR)$(RPMMACRODIR)/macros.zero-weak-mcount
	chmod 0644 $(DESTDIR)$(RPMMACRODIR)/macros.zero-weak-mcount
	$(INSTALL) -m 0755 dist/dh_zero_weak_mcount $(DESTDIR)$(BINDIR)/
	$(INSTALL) -m 0644 dist/zero_weak_mcount.pm $(DESTDIR)$(PERL5DIR)/Debian/Debhelper/Sequence/
	$(INSTALL) -m 0644 $(DOCS)/zero-weak-mcount.1 $(DOCS)/dh_zero_weak_mcount.1 $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -m 0644 $(DOCS)/install-kbuild-hook.8 $(DESTDIR)$(MANDIR)/man8/
	[ -z "$(DOCDIR)" ] || $(INSTALL) -m 0644 docs/report-format.md $(DESTDIR)$(DOCDIR)/
	for n in $(COMPLETE); do \
		$(INSTALL) -m 0644 $(DOCS)/completions/$$n.bash $(DESTDIR)$(BASHCOMPDIR)/$$n && \
		$(INSTALL) -m 0644 $(DOCS)/completions/_$$n $(DESTDIR)$(ZSHCOMPDIR)/ && \
		$(INSTALL) -m 0644 $(DOCS)/completions/$$n.fish $(DESTDIR)$(FISHCOMPDIR)/ || exit 1; \
	done
	@$(PERL) -e 'exit !grep { $$_ eq $$ARGV[0] } @INC' $(PERL5DIR) 2>/dev/null || \
		echo "make install: note: $(PERL5DIR) is not in Perl's @INC, so dh does not find the add-on there (set PERL5DIR, README)"
	@[ "$$(rpm --eval '%{_rpmmacrodir}' 2>/dev/null || echo $(RPMMACRODIR))" = $(RPMMACRODIR) ] || \
		echo "make install: note: rpm reads its macros from $$(rpm --eval '%{_rpmmacrodir}'), not $(RPMMACRODIR) (set RPMCONFIGDIR and RPMMACRODIR, README)"
ifneq ($(KERNELHOOKDIR),)
	for d in header_postinst.d postinst.d; do \
		sed 's|@SBINDIR@|$(SBINDIR)|' dist/kernel-header-hook >$(DESTDIR)$(KERNELHOOKDIR)/$$d/50-zero-weak-mcount && \
		chmod 0755 $(DESTDIR)$(KERNELHOOKDIR)/$$d/50-zero-weak-mcount || exit 1; \
	done
endif

# cargo clean honours CARGO_TARGET_DIR, and the docs live under target/.
clean:
	$(CARGO) clean
	rm -rf $(DOCS)

# First the hooks: the trees the installed install-kbuild-hook hooked (it
# lists them) would fail every module build without the tool.
HOOK := $(DESTDIR)$(SBINDIR)/install-kbuild-hook
uninstall:
	@[ ! -x $(HOOK) ] || $(HOOK) --root=$(or $(DESTDIR),/) --uninstall --all -q || { \
		echo "make uninstall: stopped, nothing removed: the trees $(HOOK) hooked fail to build modules without the tool;" \
			"fix what it says above, run $(HOOK) --uninstall --all (or --uninstall TREE), then make uninstall again" >&2; exit 1; }
	rm -f $(DESTDIR)$(BINDIR)/zero-weak-mcount $(DESTDIR)$(SBINDIR)/install-kbuild-hook \
		$(DESTDIR)$(DATADIR)/zero-weak-mcount/Makefile.snippet \
		$(DESTDIR)$(RPMCONFIGDIR)/brp-zero-weak-mcount $(DESTDIR)$(RPMMACRODIR)/macros.zero-weak-mcount \
		$(DESTDIR)$(BINDIR)/dh_zero_weak_mcount \
		$(DESTDIR)$(PERL5DIR)/Debian/Debhelper/Sequence/zero_weak_mcount.pm \
		$(DESTDIR)$(MANDIR)/man1/zero-weak-mcount.1 $(DESTDIR)$(MANDIR)/man1/dh_zero_weak_mcount.1 \
		$(DESTDIR)$(MANDIR)/man8/install-kbuild-hook.8 $(if $(DOCDIR),$(DESTDIR)$(DOCDIR)/report-format.md) \
		$(foreach n,$(COMPLETE),$(DESTDIR)$(BASHCOMPDIR)/$(n) $(DESTDIR)$(ZSHCOMPDIR)/_$(n) $(DESTDIR)$(FISHCOMPDIR)/$(n).fish)
ifneq ($(KERNELHOOKDIR),)
	rm -f $(DESTDIR)$(KERNELHOOKDIR)/header_postinst.d/50-zero-weak-mcount \
		$(DESTDIR)$(KERNELHOOKDIR)/postinst.d/50-zero-weak-mcount
endif
	@{ cat $(CREATED) 2>/dev/null; echo $(DESTDIR)$(DATADIR)/zero-weak-mcount $(if $(DOCDIR),$(DESTDIR)$(DOCDIR)) | tr ' ' '\n'; } | \
		LC_ALL=C sort -ru | while read -r d; do rmdir "$$d" 2>/dev/null || true; done; rm -f $(CREATED)

demo: build
	$(BIN) -v -o target/zwm_test.ko testdata/zwm_test.ko

# rustfmt, clippy (pedantic, warnings as errors) and rustdoc over every
# crate, ShellCheck over every shell file, pyflakes over every Python file
# (scripts/lint.sh).
lint:
	scripts/lint.sh

# The README's `cargo test`, and the tests it lists as ignored because they
# need what a chroot or container refuses (a mount namespace): run as root
# or where user namespaces are on, they must pass here.
test:
	$(CARGO) test $(CARGO_FLAGS) -- --include-ignored

# The README's two commands, word for word, in a fresh bookworm root with
# only the host's Rust toolchain and gcc, libc6-dev, make, git,
# ca-certificates, python3 (scripts/fresh-check.sh; it clones HEAD).
fresh-check:
	scripts/fresh-check.sh

# The .deb built as Debian's archive builds it, in clean trixie and sid
# roots with no network, installed, autopkgtested and lintian-clean; the
# packaged tool writes the same bytes as this host's build
# (scripts/deb-chroot.sh, docs/packaging.md).
deb-chroot:
	scripts/deb-chroot.sh --kvm

# Builds the tool's .deb and .rpm itself, and tests what they install.
integration:
	scripts/integration-test.sh

e2e: build
	scripts/e2e/zwm_e2e.py

kernel-e2e: build
	scripts/kernel-e2e.sh

# Not part of check: the series on 7.3.4, trixie-backports' linux-source-7.3
# (experimental's is still the 7.3~rc7 release candidate: scripts/kernel-e2e.sh
# --release 7.3 alone); a cold build of one kernel and its broken variant
# (docs/kernel-e2e.md).
kernel-e2e-7.3: build
	scripts/kernel-e2e.sh --release 7.3 --suite trixie-backports

# Not part of check: stock and the series on ppc64le, cross-built; a cold
# build takes 15 minutes or more on 2 cores (docs/kernel-e2e.md).
kernel-e2e-ppc64le: build
	scripts/kernel-e2e.sh --arch ppc64le

# Not part of check: the arm64 kernels (stock, series, stock with patch 1
# alone) and patch 5's selftest on them, the arm64 proof of the series
# (docs/kernel-e2e.md, "aarch64 and the lookup kernel").
kernel-selftests-aarch64: build
	scripts/kernel-selftests.sh --arch aarch64

# Not part of check: the kernel's own ftrace and livepatch selftests on the
# stock and series kernels of kernel-e2e, module tests included; about an
# hour of guest time (docs/kernel-e2e.md, "The kernel's own tests").
kernel-selftests: build
	scripts/kernel-selftests.sh

# Not part of check: stock vs series at W=1 on nine configs and five arches,
# with Debian's cross compilers (docs/kernel-e2e.md, "The build matrix").
kernel-build-matrix:
	scripts/kernel-build-matrix.sh

# Not part of check: kvm.ko built with clang against kernels built with
# clang, x86_64 and ppc64le; each builds a kernel first (docs/e2e.md).
e2e-clang: build
	scripts/e2e/zwm_e2e.py --group build

# Not part of check: Debian's 5.10, 6.1 and 6.12.94 kernels, booted with
# their own modules processed, each with its negative control (docs/e2e.md).
e2e-old: build
	scripts/e2e/zwm_e2e.py --group old

# Not part of check: a 7.2 kernel with module BTF, built with the Kbuild
# hook, then the tool upgraded and its flags changed; every module keeps
# .BTF (docs/kbuild.md).  A cold run builds the kernel first.
kbuild-btf: build
	scripts/kbuild-btf.sh

# Not part of check: the series on a lockdep, KASAN and atomic-sleep debug
# kernel under load, with a deliberately broken series as the negative
# control; builds a debug kernel first (docs/kernel-e2e.md).
kernel-debug: build
	scripts/kernel-debug.sh

# Not part of check: four kernels side by side (docs/kernel-bench.md).
kernel-bench: build
	scripts/kernel-bench.sh

kernel-bench-amdgpu: build
	scripts/kernel-bench.sh --amdgpu

# Not part of check: the .deb in a clean trixie root with two kernel ABIs
# (6.12 and trixie-backports' newest), real DKMS packages, the headers hook,
# the purge of one ABI, and the tool's removal as the negative control
# (docs/kbuild.md).  Needs root and the network (cached in ZWM_CACHE).
dkms-abi:
	scripts/integration/dkms-abi.sh

# Not part of check: --check over whole Debian module trees, with and
# without their config (docs/trees.md); a cold cache downloads about 1 GB.
tree-check: build
	scripts/tree-check.py

# Not part of check: docs/audit.md, the dead entries and at-risk functions of
# Debian's current kernels on every arch and flavour (docs/trees.md); a cold
# cache downloads about 6 GB (165 packages) and unpacks them into about
# 13 GB. ZWM=PATH audits with that build of the tool instead of this
# checkout's.
audit:
	scripts/tree-check.py --audit docs/audit.md $(if $(ZWM),--tool $(ZWM))

# Not part of check: fprobe, BPF fentry and livepatch on the functions that
# precede dead weak bodies, stock module vs processed, on stock Debian
# kernels under TCG; a few minutes a row (docs/probes.md).
probe-e2e: build
	scripts/probe/probe.py

# Not part of check: what the zero-first gate prevents (docs/rules.md).
adjust-first-demo:
	scripts/adjust-first-demo.sh

# What .ci/run runs; the static checks first, as they take a minute.
check: lint test bench-quick fresh-check integration e2e kernel-e2e

# The tool against its baselines (the read limit, the kernel's naive
# search, cat) on sid's amd64 modules (docs/performance.md); ~10 minutes.
bench: build
	scripts/bench.sh

# The same, short: two modules, few runs, no profile (part of check).
bench-quick: build
	ZWM_BENCH_QUICK=1 scripts/bench.sh

fuzz:
	scripts/fuzz.sh 60
