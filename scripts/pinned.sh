#!/usr/bin/env bash
# Run flushbench from a checkout pinned at one commit, for a queue that runs for hours while
# this tree is being edited. A worker imports some modules only when it first needs them: code
# edited under a live worker reaches it half-way (seen in the 2011 flash study: a done line
# failed on a new module beside an old one). The pinned checkout never changes under it.
#
#   scripts/pinned.sh [--at COMMIT] [--dir DIR] -- ARGS...     runs `flushbench ARGS...`
#
# --at   the commit to run (default HEAD); the checkout is moved there (it must be clean).
# --dir  where the pinned checkout lives (default ../<this folder's name>-pinned), made with
#        `git worktree add --detach` on first use.
#
# The command runs in *this* folder, so relative paths (the experiment file, --db) mean what
# they mean here; only the code comes from the pinned checkout. What git does not track is
# shared with this tree: the work folder (datasets, runs), the built Go driver and the
# machine-specific server profiles (configs/servers/*.yaml that are not committed, copied).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
at=HEAD
dir="$(dirname "$here")/$(basename "$here")-pinned"
fail() { echo "scripts/pinned.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --at|--dir)
      [ $# -ge 2 ] && [ -n "$2" ] && [ "${2#-}" = "$2" ] \
        || fail "$1 needs a value (usage: [--at COMMIT] [--dir DIR] -- ARGS)"
      if [ "$1" = --at ]; then at="$2"; else dir="$2"; fi
      shift 2 ;;
    --) shift; break ;;
    *) fail "unknown option $1 (usage: [--at COMMIT] [--dir DIR] -- ARGS)" ;;
  esac
done
[ $# -gt 0 ] || fail "no flushbench arguments after --"
command -v git >/dev/null 2>&1 || fail "git is not installed; it is needed to pin a commit (apt-get install git)"
git -C "$here" rev-parse --git-dir >/dev/null 2>&1 \
  || fail "$here is not a git checkout; run pinned.sh from a clone of flushbench"
# One sentence for each way --at can name no commit (git's own errors say "fatal: Needed a
# single revision" for all of them).
kind="$(git -C "$here" cat-file -t "$at" 2>/dev/null)" \
  || fail "--at $at names no commit of $here (git log --oneline lists them)"
[ "$kind" = commit ] || [ "$kind" = tag ] \
  || fail "--at $at names a $kind, not a commit (git log --oneline lists the commits)"
commit="$(git -C "$here" rev-parse --verify --quiet "$at^{commit}")" \
  || fail "--at $at names a $kind that points at no commit"
if [ ! -e "$dir/.git" ]; then
  [ ! -e "$dir" ] || [ -d "$dir" ] || fail "--dir $dir is a file, not a folder"
  git -C "$here" worktree add --detach "$dir" "$commit" >/dev/null 2>&1 \
    || fail "could not make the pinned checkout $dir (git -C $here worktree add --detach $dir $commit says why)"
elif [ -n "$(git -C "$dir" status --porcelain --untracked-files=no 2>/dev/null || echo x)" ]; then
  fail "$dir has changes of its own (or is no checkout); it only runs commits (git -C $dir status)"
else
  git -C "$dir" checkout --quiet --detach "$commit" 2>/dev/null \
    || fail "could not move $dir to $commit (git -C $dir checkout --detach $commit says why)"
fi
# Server profiles written by scripts/build-server.sh are machine-specific and not committed.
for profile in "$here"/configs/servers/*.yaml; do
  name="configs/servers/$(basename "$profile")"
  git -C "$here" ls-files --error-unmatch "$name" >/dev/null 2>&1 || cp "$profile" "$dir/$name"
done
echo "flushbench at $(git -C "$dir" log --oneline -1) (pinned in $dir)" >&2
export PYTHONPATH="$dir${PYTHONPATH:+:$PYTHONPATH}"
export FLUSHBENCH_WORK="${FLUSHBENCH_WORK:-$here/work}"
export FLUSHBENCH_TPCC_BIN="${FLUSHBENCH_TPCC_BIN:-$here/tpcc/bin/tpcc}"
# The venv's console script: its folder, not the current one, leads sys.path (`python -c`
# would put this checkout first and run its code instead of the pinned one), PYTHONPATH puts
# the pinned checkout before the venv's editable install, and its command line reads
# `python …/flushbench run …`, which `flushbench queue stop` knows for a worker (a `python -c`
# line it cannot tell from any other Python program, and left alone).
exec "$here/.venv/bin/flushbench" "$@"
