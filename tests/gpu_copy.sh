#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The copy task of examples/transformer-copy.json learnt on the CUDA
# backend (fedrun --backend cuda): test BLEU above 90, as on the CPU
# (tests/e2e_transformer.sh), and fedrun translate on the GPU copies its
# input. Exits 77 (SKIP) where the plugin is not built or no GPU is present.
. "$top_srcdir/tests/lib.sh"
p="$top_srcdir/examples/transformer-copy.json"
if ! "$FEDRUN" validate --backend cuda "$p" >probe.out 2>&1; then
	if grep -q -e "no backend plugin called 'cuda'" -e "CUDA device" -e "no usable CUDA" \
		-e "no backend plugin" probe.out; then
		cat probe.out
		exit 77
	fi
	cat probe.out
	die "fedrun validate --backend cuda failed"
fi
t0=$(date +%s)
if ! "$FEDRUN" -q --backend cuda "$p" --set output.dir=copy >run.out 2>&1; then
	if grep -q -e "CUDA device" -e "no usable CUDA" run.out; then
		cat run.out
		exit 77
	fi
	cat run.out
	die "the copy task on the GPU failed"
fi
t1=$(date +%s)
bleu=$(metric copy/metrics.jsonl bleu test)
[ -n "$bleu" ] || die "no test BLEU in the metrics"
awk -v b="$bleu" 'BEGIN { exit !(b > 90) }' || die "copy task on the GPU: test BLEU $bleu, not above 90"
printf 'w1 w2 w3 w4\nw5 w6 w7 w8 w9 w10\n' >in.txt
"$FEDRUN" translate copy <in.txt >out.txt 2>tr.err || { cat tr.err; die "fedrun translate failed"; }
cmp in.txt out.txt || { cat out.txt; die "the copy model trained on the GPU does not copy"; }
"$FEDRUN" translate --backend cpu copy <in.txt >out.cpu 2>tr.err ||
	{ cat tr.err; die "fedrun translate --backend cpu failed"; }
cmp in.txt out.cpu || die "the GPU-trained copy model translated on the CPU does not copy"
echo "copy task on the GPU: test BLEU $bleu in $((t1 - t0)) s; fedrun translate copies"
