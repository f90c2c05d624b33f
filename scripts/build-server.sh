#!/usr/bin/env bash
# Build a 2011-era server (MySQL 5.5, MariaDB 5.5's XtraDB, or Percona Server 5.5) from a
# source tree the user brings, install only what a flushbench sandbox needs, and write its
# server profile.
#
#   scripts/build-server.sh KIND SRC PREFIX [--name NAME]
#
#   KIND    mysql-5.5    Oracle MySQL 5.5.x source (stock InnoDB)
#           xtradb-5.5   MariaDB 5.5.x, whose InnoDB is Percona's XtraDB (storage/xtradb)
#           percona-5.5  Percona Server 5.5.x (XtraDB in storage/innobase), or Percona XtraDB
#                        Cluster 5.5.x: the same server with Galera's wsrep hooks, which stay
#                        inactive (wsrep_provider=none, checked before the profile is written)
#   SRC     a source directory, a source tarball (.tar.gz/.tar.xz/.tar.bz2/.tgz), or a git
#           directory (bare or .git; HEAD is built, or $BUILD_SERVER_REV)
#   PREFIX  where the server is installed (bin/mysqld, scripts/mysql_install_db, share/)
#   NAME    profile name (default: KIND) -> configs/servers/NAME.yaml
#
# Steps: refuse a system folder (/, /usr, /proc, $HOME...) and check the source is the product
# KIND names before reading the whole tree; install the Debian build dependencies
# when missing (apt-get, idempotent); configure with cmake out of source and build at `nice`
# with every core; `make install` into a staging directory and copy the sandbox's share of it
# into PREFIX.tmp, renamed to PREFIX at the end; write the profile last, atomically. A stamp
# in PREFIX keys the build on (source hash, flags): a second call with the same inputs only
# rewrites the profile. Build directories live under $BUILD_SERVER_CACHE
# (default ~/.cache/flushbench/build); an interrupted build resumes from there.
# See docs/servers.md.
set -euo pipefail
# The whole script is one brace group: bash parses it before running any of it, so editing
# (or updating) this file while a build runs cannot change what the running build does.
{

prog=build-server
die() { printf '%s: %s\n' "$prog" "$*" >&2; exit 1; }
usage() {
  echo "usage: $0 {mysql-5.5|xtradb-5.5|percona-5.5} SRC PREFIX [--name NAME]   (see docs/servers.md)" >&2
  exit 2
}
[ $# -ge 3 ] || usage
kind=$1 src_arg=$2 prefix_arg=$3
shift 3
name=$kind
while [ $# -gt 0 ]; do
  case $1 in
    --name) [ $# -ge 2 ] || usage; name=$2; shift 2 ;;
    *) usage ;;
  esac
done
case $kind in
  mysql-5.5|xtradb-5.5|percona-5.5) ;;
  *) die "unknown KIND '$kind': use mysql-5.5, xtradb-5.5 or percona-5.5." ;;
esac
[[ $name =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*$ && ${#name} -le 80 ]] \
  || die "profile name $(printf %q "$name") may hold only letters, digits, '.', '_' and '-' (at most 80)."
# An argument that starts with '-' would reach dirname, cd and tar as an option of theirs.
for arg in "$src_arg" "$prefix_arg"; do
  case $arg in
    -*) die "'$arg' looks like an option, not a path: write ./$arg for a file or folder of that name." ;;
    '') die "SRC and PREFIX may not be empty." ;;
  esac
done

repo=$(cd "$(dirname -- "$0")/.." && pwd)
# A profile the repository ships (tracked by git) is never replaced, whatever --name says.
if git -C "$repo" ls-files --error-unmatch -- "configs/servers/$name.yaml" >/dev/null 2>&1; then
  die "profile name '$name' is a profile flushbench ships (configs/servers/$name.yaml); it is never replaced: choose another --name."
fi
python=$repo/.venv/bin/python
[ -x "$python" ] || python=$(command -v python3) || die "no python3 to write the server profile."
cache=${BUILD_SERVER_CACHE:-$HOME/.cache/flushbench/build}
started=$(date +%s)
elapsed() { local s=$(( $(date +%s) - started )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
log() { printf '\033[1m[%s %s]\033[0m %s\n' "$prog" "$(elapsed)" "$*"; }

# PREFIX as an absolute path, links resolved, without creating anything yet (its folders are
# made once the source has passed its checks).
prefix=$(realpath -m -- "$prefix_arg")
profile=$repo/configs/servers/$name.yaml

# --- the source: kind and content hash ------------------------------------------------------
src_kind=
if [ -d "$src_arg" ] && git --git-dir="$src_arg" rev-parse --git-dir >/dev/null 2>&1 \
   && [ ! -f "$src_arg/CMakeLists.txt" ]; then
  src_kind=git
elif [ -d "$src_arg" ]; then
  src_kind=dir
elif [ -f "$src_arg" ]; then
  case $src_arg in
    *.tar.gz|*.tgz|*.tar.xz|*.txz|*.tar.bz2|*.tbz2|*.tar) src_kind=tarball ;;
    *) die "$src_arg is neither a directory nor a .tar(.gz|.xz|.bz2) source tarball." ;;
  esac
elif [ -p "$src_arg" ]; then
  die "source $src_arg is a named pipe (FIFO), not a source directory or tarball."
elif [ -S "$src_arg" ]; then
  die "source $src_arg is a socket, not a source directory or tarball."
elif [ -b "$src_arg" ] || [ -c "$src_arg" ]; then
  die "source $src_arg is a device, not a source directory or tarball."
elif [ -L "$src_arg" ]; then
  die "source $src_arg is a symbolic link to nothing (its target does not exist)."
elif [ -e "$src_arg" ]; then
  die "source $src_arg is neither a directory nor a regular file."
else
  die "source $src_arg does not exist."
fi
[ -r "$src_arg" ] || die "source $src_arg is not readable (check its permissions)."
src_abs=$(cd "$(dirname -- "$src_arg")" && pwd)/$(basename -- "$src_arg")

# The flags are part of the cache key: change them here and every server is rebuilt.
common_flags=(
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
  -DWITH_SSL=bundled -DWITH_ZLIB=system
  -DWITH_EMBEDDED_SERVER=OFF -DWITH_UNIT_TESTS=OFF -DWITHOUT_DYNAMIC_PLUGINS=1
  # Engines the study does not need (unknown names are ignored by the other product).
  -DWITHOUT_TOKUDB=1 -DWITHOUT_OQGRAPH=1 -DWITHOUT_SPHINX=1 -DWITHOUT_FEDERATED=1
  -DWITHOUT_FEDERATEDX=1 -DWITHOUT_ARCHIVE=1 -DWITHOUT_BLACKHOLE=1 -DWITHOUT_EXAMPLE=1
  -DWITHOUT_CONNECT=1 -DWITHOUT_MROONGA=1 -DWITHOUT_SPIDER=1 -DWITHOUT_CASSANDRA=1
  # 2011 C/C++ meets gcc 12: C++98 semantics, old-style globals, warnings never fatal.
  "-DCMAKE_C_FLAGS=-fcommon -Wno-error"
  "-DCMAKE_CXX_FLAGS=-std=gnu++98 -fpermissive -fcommon -Wno-narrowing -Wno-error"
)
flags_text="kind=$kind ${common_flags[*]} script=2"

# --- is it the product KIND names? (reads a handful of files, never the whole tree) -----------
what="$src_arg"
percona_knobs() { grep -lqsE 'adaptive_flushing_method|adaptive_checkpoint' "$1"/storage/*/handler/ha_innodb.cc; }
# Percona Server keeps XtraDB where MySQL keeps InnoDB; MariaDB 5.5 has it in storage/xtradb.
percona_server() {
  [ ! -d "$1/storage/xtradb" ] \
    && grep -lqsE 'adaptive_flushing_method|adaptive_checkpoint' "$1/storage/innobase/handler/ha_innodb.cc"
}
check_product() {  # $1: the source directory; sets major, minor, patch and engine_flags
  local dir=$1
  [ -f "$dir/CMakeLists.txt" ] && [ -f "$dir/VERSION" ] && [ -f "$dir/sql/mysqld.cc" ] \
    || die "$what is not a MySQL-family source tree (no CMakeLists.txt, VERSION, sql/mysqld.cc)."
  major=$(sed -n 's/^MYSQL_VERSION_MAJOR=//p' "$dir/VERSION")
  minor=$(sed -n 's/^MYSQL_VERSION_MINOR=//p' "$dir/VERSION")
  patch=$(sed -n 's/^MYSQL_VERSION_PATCH=//p' "$dir/VERSION")
  [[ $major =~ ^[0-9]+$ && $minor =~ ^[0-9]+$ ]] \
    || die "$what is not a MySQL-family source tree (its VERSION file names no MYSQL_VERSION_MAJOR and MYSQL_VERSION_MINOR)."
  [ "$major.$minor" = 5.5 ] || die "$what is version $major.$minor${patch:+.$patch}, not the 5.5 that $kind needs."
  [ ! -f "$dir/CMakeCache.txt" ] \
    || die "$what holds an in-source build (CMakeCache.txt at the top); give a clean tree (git clean -xdf, or a fresh tarball)."
  engine_flags=()
  case $kind in
    xtradb-5.5)
      if [ -d "$dir/storage/xtradb" ]; then
        engine_flags=(-DWITHOUT_INNOBASE=1)  # MariaDB: XtraDB becomes the InnoDB
      elif percona_server "$dir"; then
        die "$what is Percona Server (Percona's knobs in storage/innobase), not MariaDB: use KIND percona-5.5."
      else
        die "$what has no XtraDB (no storage/xtradb, no Percona knobs in ha_innodb.cc): use KIND mysql-5.5 for stock MySQL."
      fi ;;
    percona-5.5)
      if [ -d "$dir/storage/xtradb" ]; then
        die "$what is MariaDB (storage/xtradb), not Percona Server: use KIND xtradb-5.5."
      elif ! percona_server "$dir"; then
        die "$what has stock InnoDB (no Percona knobs in storage/innobase/handler/ha_innodb.cc): use KIND mysql-5.5."
      fi
      percona_comment "$dir" ;;
    *)
      if [ -d "$dir/storage/xtradb" ]; then
        die "$what carries Percona's XtraDB, not stock InnoDB: use KIND xtradb-5.5."
      elif percona_knobs "$dir"; then
        die "$what is Percona Server (Percona's knobs in ha_innodb.cc), not stock InnoDB: use KIND percona-5.5."
      fi ;;
  esac
}
# A plain cmake build of Percona's source says "Source distribution" where Percona's own
# builds name the product; mysqld --version (hence the flavor flushbench detects) and
# @@version_comment read this comment. The cluster tree appends ", wsrep_<version>" itself.
percona_comment() {  # $1: the source directory; adds -DCOMPILATION_COMMENT to engine_flags
  local product="Percona Server" release
  release=$(sed -n 's/^MYSQL_VERSION_EXTRA=-*//p' "$1/VERSION")
  [ -f "$1/cmake/wsrep.cmake" ] && product="Percona XtraDB Cluster"
  engine_flags+=("-DCOMPILATION_COMMENT=$product (GPL), Release ${release:-unknown}")
}

# A system folder is never a source tree, and hashing it would read every file under it (/proc
# included, which never ends): refuse it by name, before anything under it is read.
system_folder() {  # $1: an absolute path with symlinks resolved
  case $1 in
    /|/usr|/usr/local|/usr/src|/usr/share|/usr/lib|/usr/include|/bin|/sbin|/lib|/lib32|/lib64) return 0 ;;
    /boot|/etc|/etc/*|/proc|/proc/*|/sys|/sys/*|/dev|/dev/*|/run|/run/*|/var|/var/lib|/tmp) return 0 ;;
    /home|/root|/opt|/srv|/mnt|/media|/snap|/nix) return 0 ;;
  esac
  [ -n "${HOME:-}" ] && [ "$1" = "$(cd "$HOME" 2>/dev/null && pwd -P)" ]
}
src_real=$(cd "$(dirname -- "$src_arg")" && pwd -P)/$(basename -- "$src_arg")
[ "$src_kind" = tarball ] || src_real=$(cd -- "$src_arg" && pwd -P)
if system_folder "$src_real"; then
  die "$src_arg is a system folder ($src_real), not a source tree: give the folder of an unpacked MySQL, MariaDB or Percona Server 5.5 source."
fi
# A directory is built in place: it must be the product before its every file is hashed.
if [ "$src_kind" = dir ]; then check_product "$src_abs"; fi
# PREFIX is written and removed whole: it may not lie inside the source (a build would hash
# and later wipe its own install) nor hold it.
case $prefix/ in
  "$src_real"/*) [ "$src_kind" = tarball ] \
      || die "PREFIX $prefix_arg lies inside SRC $src_arg: choose a PREFIX outside the source." ;;
esac
case $src_real/ in
  "$prefix"/*) die "SRC $src_arg lies inside PREFIX $prefix_arg: choose a PREFIX that does not hold the source." ;;
esac
[ "$prefix" != "$src_real" ] || die "PREFIX $prefix_arg is SRC itself: choose another PREFIX."

log "hashing source $src_arg ($src_kind)"
case $src_kind in
  git) rev=${BUILD_SERVER_REV:-HEAD}
       src_hash=$(git --git-dir="$src_abs" rev-parse "$rev^{tree}" 2>/dev/null) \
         || die "$src_arg has no revision '$rev' to build." ;;
  tarball) src_hash=$(sha256sum "$src_abs" | cut -c1-64) ;;
  dir) # Content of every file (paths included), so an edited tree is a new build. MySQL
       # 5.5's cmake writes into the source on its first configure: each test collection
       # mysql-test/collections/X.in becomes X and X.done there. They are the build's, not
       # the source's: hashed, they would make every second call a new build.
       generated=()
       for in_file in "$src_abs"/mysql-test/collections/*.in; do
         [ -f "$in_file" ] || continue
         out=./mysql-test/collections/$(basename "${in_file%.in}")
         generated+=(! -path "$out" ! -path "$out.done")
       done
       src_hash=$(cd "$src_abs" && find . -type f ! -path './.git/*' "${generated[@]}" -print0 \
                  | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64) ;;
esac
key=$(printf '%s\n%s\n' "$src_hash" "$flags_text" | sha256sum | cut -c1-16)
stamp_text="key=$key source=$src_abs"

write_profile() {
  "$python" -m runner.server.built --name "$name" --kind "$kind" --prefix "$prefix" \
    --profile "$profile" --source "$src_abs" --key "$key"
}

# --- cache hit: same source and flags already installed ---------------------------------------
if [ -f "$prefix/.flushbench-build" ] && grep -q "^key=$key " "$prefix/.flushbench-build" \
   && [ -x "$prefix/bin/mysqld" ]; then
  log "$prefix already holds this build (key $key); writing the profile only"
  (cd "$repo" && write_profile)
  log "done in $(elapsed)"
  exit 0
fi
if [ -e "$prefix" ] && [ ! -f "$prefix/.flushbench-build" ] && [ -n "$(ls -A "$prefix" 2>/dev/null)" ]; then
  die "$prefix exists and was not made by this script; choose another PREFIX or remove it."
fi

# --- cleanup on any exit: nothing half-installed, no profile ----------------------------------
build=$cache/$key
stage=$build/stage
tmp_prefix=$prefix.tmp.$$
child=
finished=0
cleanup() {
  local code=$?
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    kill -TERM -- "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  rm -rf "$tmp_prefix" "$stage"
  if [ "$finished" != 1 ] && [ "$code" = 0 ]; then code=1; fi
  # Refused before configuring: nothing worth resuming (an unpacked tarball at most).
  if [ "$finished" != 1 ] && [ ! -d "$build/obj" ]; then rm -rf "$build"; fi
  exit "$code"
}
trap cleanup EXIT
trap 'die "interrupted after $(elapsed); nothing installed in $prefix and no profile written (run again to resume from $build)."' INT TERM HUP

# --- unpack (tarball, git) or use the directory in place --------------------------------------
mkdir -p "$build"
buildlog=$build/build.log
case $src_kind in
  dir) srcdir=$src_abs ;;
  *) srcdir=$build/src
     if [ ! -f "$build/src.done" ]; then
       rm -rf "$srcdir"; mkdir -p "$srcdir"
       log "unpacking $src_arg into $srcdir"
       if [ "$src_kind" = tarball ]; then
         tar -xf "$src_abs" -C "$srcdir" 2>>"$buildlog" || die "cannot unpack $src_arg (not a readable tarball)."
       else
         git --git-dir="$src_abs" archive "$rev" 2>>"$buildlog" | tar -x -C "$srcdir" 2>>"$buildlog" \
           || die "cannot export $rev from $src_arg (git archive failed: missing objects?)."
       fi
       # A tarball usually holds one top folder: build inside it.
       if [ "$(ls -A "$srcdir" | wc -l)" = 1 ] && [ -d "$srcdir/$(ls -A "$srcdir")" ]; then
         top=$(ls -A "$srcdir"); mv "$srcdir/$top" "$build/src.top" && rmdir "$srcdir" \
           && mv "$build/src.top" "$srcdir"
       fi
       touch "$build/src.done"
     fi ;;
esac

# A tarball or a git revision is the product once unpacked (a directory was checked above).
if [ "$src_kind" != dir ]; then check_product "$srcdir"; fi
log "source: $kind $major.$minor.$patch, key $key"

# --- Debian build dependencies ----------------------------------------------------------------
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@";
  elif command -v sudo >/dev/null 2>&1; then sudo "$@";
  else die "need root (or sudo) to run: $*"; fi
}
packages=(cmake bison make gcc g++ libncurses-dev libaio-dev zlib1g-dev)
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing build dependencies: ${missing[*]}"
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >>"$buildlog" 2>&1; then
    as_root apt-get update >>"$buildlog" 2>&1 || true  # package lists may be stale or absent
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >>"$buildlog" 2>&1 \
      || die "apt-get could not install ${missing[*]} (see $buildlog)."
  fi
fi

# --- configure, build, install ----------------------------------------------------------------
jobs=$(nproc 2>/dev/null || echo 2)
# Run a step in its own process group (so an interrupt stops the compilers too), logging to
# $buildlog and reporting make's percentage at most every 20 s.
run_step() {
  local what=$1; shift
  setsid "$@" >>"$buildlog" 2>&1 &
  child=$!
  local last=-1 shown=0 pct from
  from=$(( $(stat -c %s "$buildlog" 2>/dev/null || echo 0) + 1 ))  # this step's lines only
  while kill -0 "$child" 2>/dev/null; do
    sleep 2
    pct=$(tail -c +"$from" "$buildlog" 2>/dev/null | grep -oE '^\[ *[0-9]+%\]' | tail -1 | tr -dc 0-9 || true)
    if [ -n "$pct" ] && [ "$pct" != "$last" ] && [ $(( $(date +%s) - shown )) -ge 20 ]; then
      log "$what: $pct %"; last=$pct; shown=$(date +%s)
    fi
  done
  local rc=0
  wait "$child" || rc=$?
  child=
  return $rc
}
obj=$build/obj
mkdir -p "$obj"
log "configuring (log: $buildlog)"
run_step configure nice -n 19 cmake -S "$srcdir" -B "$obj" -DCMAKE_INSTALL_PREFIX="$prefix" \
    "${common_flags[@]}" "${engine_flags[@]}" \
  || die "cmake could not configure $what (last lines of $buildlog tell why)."
log "building with $jobs jobs at nice 19"
run_step make nice -n 19 make -C "$obj" -j"$jobs" \
  || die "the build of $what failed (the first 'error:' in $buildlog tells why)."
rm -rf "$stage"
run_step install nice -n 19 make -C "$obj" install DESTDIR="$stage" \
  || die "make install of $what failed (see $buildlog)."

# --- keep what a sandbox needs ----------------------------------------------------------------
inst=$stage$prefix
rm -rf "$tmp_prefix"; mkdir -p "$tmp_prefix/bin" "$tmp_prefix/scripts"
for bin in mysqld my_print_defaults resolveip; do
  [ -x "$inst/bin/$bin" ] || die "the build of $what installed no bin/$bin."
  cp -p "$inst/bin/$bin" "$tmp_prefix/bin/"
  # Debug info is ~50 MB of mysqld; the symbol table (what perf needs) stays.
  strip --strip-debug "$tmp_prefix/bin/$bin" 2>>"$buildlog" || true
done
[ -f "$inst/scripts/mysql_install_db" ] || die "the build of $what installed no scripts/mysql_install_db."
cp -p "$inst/scripts/mysql_install_db" "$tmp_prefix/scripts/"
[ -d "$inst/share" ] || die "the build of $what installed no share/ (error messages, system tables)."
cp -a "$inst/share" "$tmp_prefix/share"
# Documentation and manual pages are not needed to run a sandbox.
rm -rf "$tmp_prefix/share/man" "$tmp_prefix/share/info" "$tmp_prefix/share/doc"
printf '%s\n' "$stamp_text" >"$tmp_prefix/.flushbench-build"
printf 'version=%s\nflags=%s %s\nbuilt=%s\n' "$major.$minor.$patch" "${common_flags[*]}" \
  "${engine_flags[*]}" "$(date -u +%FT%TZ)" >>"$tmp_prefix/.flushbench-build"

# Swap the new install in; an older build at PREFIX is removed only now.
old=
if [ -e "$prefix" ]; then old=$prefix.old.$$; mv "$prefix" "$old"; fi
mv "$tmp_prefix" "$prefix"
[ -n "$old" ] && rm -rf "$old"
rm -rf "$stage"

(cd "$repo" && write_profile)
size=$(du -sh "$prefix" | cut -f1)
rm -rf "$obj" "$srcdir.done" "$build/src.done"
[ "$src_kind" != dir ] && rm -rf "$build/src"
log "built $kind $major.$minor.$patch into $prefix ($size) in $(elapsed); profile $profile"
finished=1
exit 0
}
