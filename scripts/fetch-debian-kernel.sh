#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# fetch-debian-kernel.sh SUITE DEBARCH [PKG...]
#
# Fetch the newest Debian kernel (image + modules) that SUITE offers for
# DEBARCH, plus any extra packages named on the command line, and unpack them
# (dpkg -x) into one extraction root.  The machine's apt configuration is not
# touched: a private sources list, state and cache live under the cache folder.
#
#   SUITE    bullseye | bookworm | trixie | sid (a release includes its
#            -security suite), or experimental (with sid, pinned like
#            backports; for linux-source of the next release), or
#            bookworm-backports or trixie-backports (with bookworm or trixie
#            for what backports lacks, pinned so that its kernel is the
#            candidate)
#   DEBARCH  amd64 | ppc64el | i386 | arm64 | armhf | armel | riscv64 | s390x |
#            loong64 | mips64el | mipsel
#   PKG...   extra packages to unpack into the same root (e.g. busybox-static)
#
# stdout:  the extraction root (holds boot/, lib/modules/KVER/ or
#          usr/lib/modules/KVER/, ...).  KVER is written to ROOT/../kver.
# stderr:  everything else.
#
# Environment:
#   ZWM_CACHE            cache folder (default $HOME/.cache/zero-weak-mcount)
#   ZWM_APT_MAX_AGE      refresh the package lists when older than this many
#                        seconds (default 86400); 0 = always refresh
#   ZWM_OFFLINE=1        never refresh the lists (use what is cached)
#   ZWM_DEBIAN_MIRROR    default http://deb.debian.org/debian
#   ZWM_DEBIAN_SECURITY  default http://deb.debian.org/debian-security; "none"
#                        leaves the -security suite out (its index can name a
#                        build that is not on the mirror yet for one arch)
#   ZWM_KEYRING          default /usr/share/keyrings/debian-archive-keyring.gpg
#   ZWM_FLAVOUR          kernel flavour (default from DEBARCH: amd64, powerpc64le, ...)
#   ZWM_KERNEL_IMAGE     a linux-image-* package to take instead of the newest
#                        (an older build the suite still carries)
#
# Re-running is fast: lists are refreshed only when stale, .deb files are kept
# and each one is unpacked once.  When a refresh brings a newer kernel, the
# newest is resolved again and unpacked into a new root.
set -euo pipefail

log() { printf 'fetch-debian-kernel: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

if [ $# -lt 2 ]; then
    sed -n '2,/^set -/{/^set -/d;s/^# \{0,1\}//;p}' "$0" >&2
    exit 2
fi
SUITE=$1; DEBARCH=$2; shift 2
EXTRA=("$@")

MIRROR=${ZWM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${ZWM_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
KEYRING=${ZWM_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
CACHE=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}
MAX_AGE=${ZWM_APT_MAX_AGE:-86400}

case "$SUITE" in
    bullseye|bookworm|trixie|sid|bookworm-backports|trixie-backports|experimental) ;;
    *) die "unsupported suite '$SUITE' (bullseye|bookworm|trixie|sid|bookworm-backports|trixie-backports|experimental)";;
esac
case "$DEBARCH" in
    amd64)   FLAVOUR=amd64;;
    ppc64el) FLAVOUR=powerpc64le;;
    arm64)   FLAVOUR=arm64;;
    i386)    FLAVOUR=686;;
    armhf)   FLAVOUR=armmp;;
    armel)   FLAVOUR=rpi;;
    mips64el) FLAVOUR=mips64r2el;;
    mipsel)  FLAVOUR=4kc-malta;;
    riscv64) FLAVOUR=riscv64;;
    s390x)   FLAVOUR=s390x;;
    loong64) FLAVOUR=loong64;;
    *) die "unsupported architecture '$DEBARCH' (amd64|ppc64el|i386|arm64|armhf|armel|riscv64|s390x|loong64|mips64el|mipsel)";;
esac
FLAVOUR=${ZWM_FLAVOUR:-$FLAVOUR}
[ -r "$KEYRING" ] || die "keyring $KEYRING not readable (apt-get install debian-archive-keyring)"
for t in apt-get apt-cache dpkg-deb flock; do
    command -v "$t" >/dev/null || die "$t not found"
done

BASE=$CACHE/debian/$SUITE-$DEBARCH
APTDIR=$BASE/apt
DEBS=$BASE/debs
mkdir -p "$APTDIR/etc/apt.conf.d" "$APTDIR/etc/preferences.d" \
         "$APTDIR/state/lists/partial" "$APTDIR/cache/archives/partial" "$DEBS"

# One fetch per suite/arch at a time.
exec 9>"$BASE/.lock"
flock 9

SRC=$APTDIR/etc/sources.list
{
    case "$SUITE" in
        bullseye|bookworm|trixie)
            echo "deb [signed-by=$KEYRING] $MIRROR $SUITE main"
            [ "$SECURITY" = none ] ||
                echo "deb [signed-by=$KEYRING] $SECURITY $SUITE-security main";;
        sid)
            echo "deb [signed-by=$KEYRING] $MIRROR sid main";;
        experimental)
            echo "deb [signed-by=$KEYRING] $MIRROR sid main"
            echo "deb [signed-by=$KEYRING] $MIRROR experimental main";;
        bookworm-backports|trixie-backports)
            echo "deb [signed-by=$KEYRING] $MIRROR ${SUITE%-backports} main"
            echo "deb [signed-by=$KEYRING] $MIRROR $SUITE main";;
    esac
} > "$SRC.new"
if ! cmp -s "$SRC.new" "$SRC" 2>/dev/null; then
    mv "$SRC.new" "$SRC"
    rm -f "$APTDIR/state/updated"     # sources changed: lists must be refreshed
else
    rm -f "$SRC.new"
fi
touch "$APTDIR/state/status"
# Backports are NotAutomatic: without a pin the release's own kernel wins.
# Backports are pinned by codename (n=): their archive name follows the
# release's role (trixie-backports is a=stable-backports, bookworm-backports
# a=oldstable-backports); experimental by archive (its codename is rc-buggy).
case "$SUITE" in
    *-backports) printf 'Package: *\nPin: release n=%s\nPin-Priority: 990\n' "$SUITE";;
    experimental) printf 'Package: *\nPin: release a=%s\nPin-Priority: 990\n' "$SUITE";;
esac > "$APTDIR/etc/preferences"

# Private configuration (APT_CONFIG is read before anything else, so the
# host's apt.conf.d is never read: no host index targets such as DEP-11, no
# hooks, no proxies).  Nothing under /etc/apt is used or modified.
mkdir -p "$APTDIR/etc/sources.list.d" "$APTDIR/etc/trusted.gpg.d"
cat > "$APTDIR/etc/apt.conf" <<EOF
Dir::Etc::main "$APTDIR/etc/apt.conf";
Dir::Etc::Parts "$APTDIR/etc/apt.conf.d";
Dir::Etc::SourceList "$SRC";
Dir::Etc::SourceParts "$APTDIR/etc/sources.list.d";
Dir::Etc::Preferences "$APTDIR/etc/preferences";
Dir::Etc::PreferencesParts "$APTDIR/etc/preferences.d";
Dir::Etc::Trusted "$APTDIR/etc/trusted.gpg";
Dir::Etc::TrustedParts "$APTDIR/etc/trusted.gpg.d";
Dir::State "$APTDIR/state";
Dir::State::status "$APTDIR/state/status";
Dir::Cache "$APTDIR/cache";
APT::Architecture "$DEBARCH";
APT::Architectures { "$DEBARCH"; };
APT::Sandbox::User "root";
Acquire::Languages "none";
// Keep the lists compressed and skip the source cache: a smaller cache folder.
Acquire::GzipIndexes "true";
Dir::Cache::srcpkgcache "";
// Signatures are still verified; the validity window is not, so a frozen or
// slow mirror (whose Release has expired) keeps working.
Acquire::Check-Valid-Until "false";
Acquire::Check-Date "false";
Debug::NoLocking "true";
EOF
export APT_CONFIG=$APTDIR/etc/apt.conf
rm -f "$APTDIR/cache/srcpkgcache.bin"
# The same settings again on the command line, for good measure.
APT_OPTS=(
    -o "Dir::Etc::SourceList=$SRC"
    -o "Dir::Etc::SourceParts=$APTDIR/etc/sources.list.d"
    -o "Dir::State=$APTDIR/state"
    -o "Dir::State::status=$APTDIR/state/status"
    -o "Dir::Cache=$APTDIR/cache"
    -o "APT::Architecture=$DEBARCH"
    -o "APT::Architectures=$DEBARCH"
    -q
)

# --- refresh the package lists when stale -----------------------------------
need_update=0
if [ "${ZWM_OFFLINE:-0}" != 1 ]; then
    if [ ! -e "$APTDIR/state/updated" ]; then
        need_update=1
    else
        age=$(( $(date +%s) - $(stat -c %Y "$APTDIR/state/updated") ))
        [ "$age" -ge "$MAX_AGE" ] && need_update=1
    fi
fi
if [ "$need_update" = 1 ]; then
    log "updating package lists for $SUITE/$DEBARCH"
    if apt-get "${APT_OPTS[@]}" update >&2; then
        touch "$APTDIR/state/updated"
    elif ls "$APTDIR"/state/lists/*_Packages* >/dev/null 2>&1; then
        log "warning: apt-get update failed; using the cached lists"
    else
        die "apt-get update failed and no cached lists"
    fi
fi

# --- resolve the newest kernel through the flavour metapackage -------------
META=linux-image-$FLAVOUR
deps_of() {  # direct Depends (first alternative only) of the candidate of $1
    apt-cache "${APT_OPTS[@]}" depends --no-recommends --no-suggests \
        --no-conflicts --no-breaks --no-replaces --no-enhances "$1" 2>/dev/null |
        awk '/^  Depends: /{ sub(/^  Depends: /,""); gsub(/[<>]/,""); print }'
}
IMAGE=${ZWM_KERNEL_IMAGE:-$(deps_of "$META" | grep -E '^linux-image-' | head -n1 || true)}
[ -n "$IMAGE" ] || die "cannot resolve $META in $SUITE/$DEBARCH (no candidate or no linux-image-* dependency)"
# Without its own build, backports would hand over the release's kernel.
[ -n "${ZWM_KERNEL_IMAGE:-}" ] || [ "$SUITE" = "${SUITE%-backports}" ] ||
    apt-cache "${APT_OPTS[@]}" show --no-all-versions "$META" 2>/dev/null | grep '^Version: .*~bpo' >/dev/null ||
    die "cannot resolve $META in $SUITE/$DEBARCH: only ${SUITE%-backports} has one"
# An index can name a build that the mirror does not carry (yet) for this
# arch: then fall back to the newest older build of the flavour that it has.
fetchable() {
    local file
    file=$(apt-get "${APT_OPTS[@]}" download --print-uris "$1" 2>/dev/null | awk 'NR==1{print $2}')
    [ -n "$file" ] || return 1
    [ -f "$DEBS/$file" ] || (cd "$DEBS" && apt-get "${APT_OPTS[@]}" download "$1" >&2)
}
# The answer is remembered per listed build, so that later runs (and offline
# ones) do not probe the missing builds again.
FALLBACK=$APTDIR/state/fallback
if [ -f "$FALLBACK" ] && [ "$(head -n1 "$FALLBACK")" = "$IMAGE" ]; then
    IMAGE=$(sed -n 2p "$FALLBACK")
    log "$META: the mirror lacked the listed build last time; using $IMAGE"
elif ! fetchable "$IMAGE"; then
    log "warning: $IMAGE is listed but cannot be downloaded; trying older builds"
    listed=$IMAGE
    IMAGE=$(apt-cache "${APT_OPTS[@]}" search --names-only "^linux-image-[0-9][^ ]*[0-9]-$FLAVOUR(-unsigned)?\$" 2>/dev/null |
        awk '{print $1}' | grep -vxF "$IMAGE" | sort -rV |
        while read -r p; do fetchable "$p" && { echo "$p"; break; }; done)
    [ -n "$IMAGE" ] || die "no linux-image-*-$FLAVOUR in $SUITE/$DEBARCH can be downloaded"
    printf '%s\n%s\n' "$listed" "$IMAGE" > "$FALLBACK"
fi
ABI=${IMAGE#linux-image-}
ABI=${ABI%-unsigned}
log "$META -> $IMAGE"

# Default set: the image plus the closure of its dependencies that belong to
# the same kernel build (names containing the ABI string: linux-binary-*,
# linux-modules-*, linux-base-* on sid; nothing extra on bookworm).
declare -A seen=()
queue=("$IMAGE")
PKGS=()
while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}; queue=("${queue[@]:1}")
    [ -n "${seen[$p]:-}" ] && continue
    seen[$p]=1
    PKGS+=("$p")
    while read -r d; do
        [ -n "$d" ] || continue
        case "$d" in *"$ABI"*) queue+=("$d");; esac
    done < <(deps_of "$p")
done
PKGS+=("${EXTRA[@]}")

ROOTBASE=$BASE/$ABI
ROOT=$ROOTBASE/root
mkdir -p "$ROOT"
touch "$ROOTBASE/extracted"

# --- download (kept in $DEBS) and unpack each .deb once ---------------------
for p in "${PKGS[@]}"; do
    uri=$(apt-get "${APT_OPTS[@]}" download --print-uris "$p" 2>/dev/null | head -n1) ||
        die "no package '$p' in $SUITE/$DEBARCH"
    [ -n "$uri" ] || die "no package '$p' in $SUITE/$DEBARCH"
    # 'URL' FILENAME SIZE SHA256:HEX
    read -r _url file size hash <<<"$uri"
    deb=$DEBS/$file
    if [ -f "$deb" ] && [ "$(stat -c %s "$deb")" = "$size" ]; then
        :
    else
        log "downloading $p ($file, $size bytes)"
        (cd "$DEBS" && apt-get "${APT_OPTS[@]}" download "$p" >&2) ||
            die "apt-get download $p failed"
        [ -f "$deb" ] || die "apt-get download $p did not produce $file"
        case "$hash" in
            SHA256:*)
                echo "${hash#SHA256:}  $deb" | sha256sum -c --status ||
                    { rm -f "$deb"; die "checksum mismatch for $file"; };;
        esac
    fi
    if ! grep -qxF "$file" "$ROOTBASE/extracted"; then
        log "unpacking $file"
        dpkg-deb -x "$deb" "$ROOT"
        echo "$file" >> "$ROOTBASE/extracted"
    fi
done

# --- KVER from the module tree (falls back to the ABI string) ---------------
KVER=
for d in "$ROOT"/lib/modules/* "$ROOT"/usr/lib/modules/*; do
    [ -d "$d" ] || continue
    KVER=$(basename "$d")
    [ "$KVER" = "$ABI" ] && break
done
[ -n "$KVER" ] || KVER=$ABI
echo "$KVER" > "$ROOTBASE/kver"
log "kernel $KVER in $ROOT"
printf '%s\n' "$ROOT"
