#!/bin/sh
# version.sh prints the version a build of usher carries: the one logic
# that make release, make image and the release workflow share, and that
# `usher version` then prints (cmd/usher/version.go).
#
#   - at a tag vX.Y.Z: that tag ("v0.1.0"; "v0.1.0-dirty" with changes
#     not committed);
#   - after a tag: git describe's "v0.1.0-3-g0276585ef88a" (three commits
#     after v0.1.0);
#   - with no tag yet: the VERSION file's version as a pre-release of the
#     commit, "v0.1.0-dev.0276585ef88a" (or "-dirty");
#   - outside git (a source archive): "v0.1.0-dev".
#
# VERSION holds the version of the next (or current) release; bump it in
# the commit that the release tag will name (see CHANGELOG.md).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
base=$(tr -d ' \t\r\n' < "$root/VERSION")
case $base in
v[0-9]*.[0-9]*.[0-9]*) ;;
*) echo "version.sh: $root/VERSION must hold a version like v0.1.0, got \"$base\"" >&2; exit 1 ;;
esac
if desc=$(git -C "$root" describe --tags --match 'v[0-9]*' --abbrev=12 --dirty 2>/dev/null); then
	echo "$desc"
	exit 0
fi
if commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null); then
	dirty=
	git -C "$root" diff --quiet HEAD -- 2>/dev/null || dirty=-dirty
	echo "$base-dev.$commit$dirty"
	exit 0
fi
echo "$base-dev"
