#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Recomputes repro/bf16's committed results.md from its raw.tsv and
# machine.txt and fails when a number (or anything else) differs.
# Usage: repro/bf16/check-results.sh [DIR]   (default repro/bf16/results)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034 # used by common.sh
prog=check-results.sh
top=$(cd "$here/../.." && pwd)
# shellcheck source=../common.sh
. "$top/repro/common.sh"
dir=${1:-$here/results}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$dir/raw.tsv" "$dir/machine.txt" "$tmp/"
"$here/results.sh" "$tmp"
same_files "$dir" "$tmp" results.md || exit 1
echo "check-results.sh: $dir/results.md recomputes from raw.tsv"
