#!/usr/bin/env bash
# Prints this checkout's semantic version without the "v", the one
# `beamer version` and the Debian package carry (make build, make deb):
#   v0.1.0 tagged on HEAD          -> 0.1.0
#   3 commits after v0.1.0         -> 0.1.0+3.gabcdef123456
#   no tag (a shallow CI clone)    -> 0.1.0+git.abcdef123456 (CHANGELOG.md's
#                                     newest release, the revision)
# with "dirty" added to the build metadata for uncommitted changes. "+" is build metadata in
# semver and sorts after the release in dpkg.
set -euo pipefail
cd "$(dirname "$0")/.."
dirty=
if git rev-parse --git-dir >/dev/null 2>&1 && ! git diff --quiet HEAD 2>/dev/null; then
	dirty=dirty
fi
# suffix appends build metadata: +a.b, or .a.b after an existing "+".
suffix() { case $1 in *+*) echo "$1.$2" ;; *) echo "$1+$2" ;; esac; }
if d=$(git describe --tags --match 'v[0-9]*' --abbrev=12 2>/dev/null); then
	d=${d#v}
	# 0.1.0-3-gabcdef123456 -> 0.1.0+3.gabcdef123456
	if [[ $d =~ ^(.*)-([0-9]+)-(g[0-9a-f]+)$ ]]; then
		d="${BASH_REMATCH[1]}+${BASH_REMATCH[2]}.${BASH_REMATCH[3]}"
	fi
else
	d=$(sed -n 's/^## \[\([0-9][0-9.]*[0-9]\)\].*/\1/p' CHANGELOG.md | head -1)
	if [ -z "$d" ]; then
		echo "version.sh: no release heading (## [X.Y.Z]) in CHANGELOG.md" >&2
		exit 1
	fi
	if rev=$(git rev-parse --short=12 HEAD 2>/dev/null); then
		d=$(suffix "$d" "git.$rev")
	fi
fi
if [ -n "$dirty" ]; then
	d=$(suffix "$d" dirty)
fi
echo "$d"
