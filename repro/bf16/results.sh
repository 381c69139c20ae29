#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes OUT/results.md from OUT/raw.tsv and OUT/machine.txt (what
# repro/bf16/run.sh measured): per experiment and metric the FP32 and bf16
# values of seeds 1 and 2, the FP32 seeds' spread |s1 - s2|, the bf16 -
# FP32 difference of each seed, and the verdict of issue 37's criterion:
# bf16 is "within the spread of two FP32 seeds" when, for each seed, the
# bf16 run differs from the FP32 run of that seed (same data order, same
# initial model) by no more than the two FP32 seeds differ from each other.
# Usage: repro/bf16/results.sh OUT
set -eu
export LC_ALL=C
[ $# -eq 1 ] || { echo "usage: results.sh OUT" >&2; exit 2; }
out=$1
[ -e "$out/raw.tsv" ] || { echo "results.sh: $out/raw.tsv: missing (run run.sh)" >&2; exit 1; }
{
	echo "# bf16 against FP32 (issue 37)"
	echo
	echo "Written by repro/bf16/results.sh from raw.tsv; machine.txt:"
	echo
	sed 's/^/    /' "$out/machine.txt"
	echo
	echo "| experiment | metric | FP32 s1 | FP32 s2 | FP32 spread | bf16 s1 | bf16 s2 | bf16 - FP32 s1 | bf16 - FP32 s2 | within the spread |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	awk -F'\t' 'NR > 1 { k = $1 "\t" $4; if (!(k in seen)) { seen[k] = 1; keys[++n] = k }
			v[k, $2, $3] = $5 }
		END {
			for (i = 1; i <= n; i++) {
				k = keys[i]; split(k, e, "\t")
				if (!((k, "fp32", 1) in v) || !((k, "fp32", 2) in v) ||
				    !((k, "bf16", 1) in v) || !((k, "bf16", 2) in v)) {
					printf "| %s | %s | incomplete |||||||\n", e[1], e[2]; continue }
				f1 = v[k, "fp32", 1]; f2 = v[k, "fp32", 2]
				b1 = v[k, "bf16", 1]; b2 = v[k, "bf16", 2]
				sp = f1 - f2; if (sp < 0) sp = -sp
				d1 = b1 - f1; d2 = b2 - f2
				a1 = d1 < 0 ? -d1 : d1; a2 = d2 < 0 ? -d2 : d2
				printf "| %s | %s | %.4f | %.4f | %.4f | %.4f | %.4f | %+.4f | %+.4f | %s |\n",
					e[1], e[2], f1, f2, sp, b1, b2, d1, d2,
					(a1 <= sp && a2 <= sp) ? "yes" : "no"
			}
		}' "$out/raw.tsv"
	echo
	echo "brown: examples/brown-fedavg.json for 5 rounds (gru-lm small, 100 clients, 10 a round)."
	echo "passban: repro/passban2022/run.sh --quick (tiny transformer, 1000 pairs a domain; the"
	echo "federated model's mean test NLL, chrF and BLEU over five domains, and the generic"
	echo "model's on its own test set; BLEU is 0.0 at the quick size in every precision)."
} >"$out/results.md"
