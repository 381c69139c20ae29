#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Recomputes repro/bf16's committed results.md from its raw.tsv and
# machine.txt and fails when a number (or anything else) differs.
# Usage: repro/bf16/check-results.sh [DIR]   (default repro/bf16/results)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$here/results}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$dir/raw.tsv" "$dir/machine.txt" "$tmp/"
"$here/results.sh" "$tmp"
if ! diff -u "$dir/results.md" "$tmp/results.md"; then
	echo "check-results.sh: $dir/results.md differs from what raw.tsv gives" >&2
	exit 1
fi
echo "check-results.sh: $dir/results.md recomputes from raw.tsv"
