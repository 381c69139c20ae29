#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Selection in the push direction: the server sends each client only the
# tensors its selector picks (from their change since the last round), the
# client keeps its own values of the others; with "both" push and pull each
# have their own selector. Runs stay reproducible across threads and
# interruptions, and fewer bytes are pushed than with every tensor.
. "$top_srcdir/tests/lib.sh"
p="$top_srcdir/tests/pipelines/dp_greater.json"
both='selector={"plugin": "dp_greater", "max_clients": 12, "direction": "both"}'
push='selector={"plugin": "random", "count": "median", "direction": "push"}'
run_ok --threads 1 "$p" --set output.dir=all --set 'selector={"plugin": "all"}'
run_ok --threads 1 "$p" --set output.dir=b1 --set "$both"
run_ok --threads 2 "$p" --set output.dir=b2 --set "$both"
cmp b1/final.safetensors b2/final.safetensors || die "push+pull: --threads 1 and 2 differ"
cmp -s all/final.safetensors b1/final.safetensors && die "push selection changed nothing"
bytes() { sed -n "s/.*\"round\":$2,.*\"$3\":\([0-9]*\).*/\1/p" "$1/metrics.jsonl" | head -n 1; }
[ "$(bytes b1 1 bytes_push)" -eq "$(bytes all 1 bytes_push)" ] || die "round 1 must push every tensor"
[ "$(bytes b1 5 bytes_push)" -lt "$(bytes all 5 bytes_push)" ] || die "push selection did not save bytes"
[ "$(bytes b1 5 bytes_pull)" -lt "$(bytes all 5 bytes_pull)" ] || die "pull selection did not save bytes"
# Push only: every tensor is pulled back.
run_ok --threads 2 "$p" --set output.dir=p1 --set "$push"
[ "$(bytes p1 5 bytes_pull)" -eq "$(bytes all 5 bytes_pull)" ] || die "push-only must pull every tensor"
[ "$(bytes p1 5 bytes_push)" -lt "$(bytes all 5 bytes_push)" ] || die "push-only did not save bytes"
# Interrupted and resumed: clients' own parameters and both selectors'
# state come back from the checkpoint.
"$FEDRUN" -q --threads 2 "$p" --set output.dir=r --set "$both" --set rounds=5 >/dev/null 2>&1 ||
	die "first half failed"
run_ok --threads 1 --resume "$p" --set output.dir=r --set "$both"
cmp b1/final.safetensors r/final.safetensors || die "push+pull: resumed run differs"
echo "push and pull selection: reproducible, resumable, round-5 bytes pushed $(bytes b1 5 bytes_push) of $(bytes all 5 bytes_push)"
