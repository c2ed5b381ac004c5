#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-only
# debhelper sequence add-on: "Build-Depends: dh-sequence-zero-weak-mcount"
# runs dh_zero_weak_mcount right after dh_strip, which is after any
# stripping a package does and before dh_md5sums and dh_builddeb.
use strict;
use warnings;
use Debian::Debhelper::Dh_Lib;

insert_after('dh_strip', 'dh_zero_weak_mcount');

1;
