#!/bin/bash
# Stages the trees README's GPU command is compared on: stage.sh DEST NAME COMMIT-OR-WORKTREE
# (a commit: `git archive` of it; a directory: its tracked files as they stand in that worktree, edits included).
# What a run needs: suite/, kernels/, hardware_profiles/, reports/ (less its example report), triton_portability/
# where the tree has one, conftest.py, pyproject.toml, tox.ini; and ab.sh beside the trees.
set -e
dest=$1; name=$2; src=$3; repo=${REPO:-/work/wt/perf}
paths="suite kernels hardware_profiles reports triton_portability conftest.py pyproject.toml tox.ini"
rm -rf "$dest/$name"; mkdir -p "$dest/$name"
if [ -d "$src" ]; then
  (cd "$src" && git ls-files -z -- $paths | tar --null -T - -cf -) | tar -x -C "$dest/$name"
  echo "$(git -C "$src" rev-parse HEAD) $(git -C "$src" status --short -- $paths | wc -l) file(s) changed" > "$dest/$name/TREE"
else
  present=$(for p in $paths; do git -C "$repo" cat-file -e "$src:$p" 2>/dev/null && echo "$p"; done)
  git -C "$repo" archive "$src" $present | tar -x -C "$dest/$name"
  git -C "$repo" rev-parse "$src" > "$dest/$name/TREE"
fi
rm -rf "$dest/$name/reports/example"
cp "$(dirname "$0")/ab.sh" "$dest/ab.sh"
du -sh "$dest/$name"
