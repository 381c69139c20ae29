#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Reproducibility: the same pipeline and seed give a byte-identical
# final.safetensors across runs and across thread counts; another seed does
# not.
. "$top_srcdir/tests/lib.sh"
p="$top_srcdir/tests/pipelines/repro.json"
run_ok --threads 1 "$p" --set output.dir=a
run_ok --threads 1 "$p" --set output.dir=b
run_ok --threads 2 "$p" --set output.dir=c
run_ok --threads 3 "$p" --set output.dir=d
# 8 threads, 20 clients: 16 on 8 workers, then the last 4 on 2 threads each.
run_ok --threads 8 "$p" --set output.dir=f
cmp a/final.safetensors b/final.safetensors || die "two runs differ"
cmp a/final.safetensors c/final.safetensors || die "--threads 1 and 2 differ"
cmp a/final.safetensors d/final.safetensors || die "--threads 1 and 3 differ"
cmp a/final.safetensors f/final.safetensors || die "--threads 1 and 8 differ"
run_ok --threads 2 "$p" --set output.dir=e --set seed=8
cmp -s a/final.safetensors e/final.safetensors && die "another seed gave the same model"
# Metrics agree too, apart from wall time.
strip() { sed 's/,"wall":[^}]*//' "$1"; }
[ "$(strip a/metrics.jsonl)" = "$(strip c/metrics.jsonl)" ] || die "metrics differ across threads"
# Bytes are counted: 20 clients a round, 300 floats each way plus headers.
grep -q '"bytes_push":' a/metrics.jsonl || die "no byte counts"
push=$(sed -n 's/.*"round":1,.*"bytes_push":\([0-9]*\).*/\1/p' a/metrics.jsonl | head -n 1)
[ "$push" -eq $((20 * (48 + 8 + 300 * 4))) ] || die "bytes_push = $push"
# An existing run is not overwritten by accident.
"$FEDRUN" -q "$p" --set output.dir=a 2>err && die "second run into the same directory succeeded"
grep -q "already holds a run" err || die "no clear message for an existing run"
cmp a/final.safetensors b/final.safetensors || die "the refused run changed the old one"
echo "reproducible: $(wc -c < a/final.safetensors) bytes identical across runs and threads"
