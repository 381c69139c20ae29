#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# DP-FedAvg end to end: a central gaussian run with reproducible noise
# reports a privacy.epsilon that grows every round; interrupted (SIGTERM
# after a checkpoint) and resumed, it ends with the same model and the same
# epsilon series, the accountant's state having gone through the
# checkpoint. With secure noise two runs differ. laplace accounts too.
. "$top_srcdir/tests/lib.sh"
p="$top_srcdir/tests/pipelines/dp-central.json"

# series FILE METRIC: the server's values of METRIC, one line per round.
series() {
	grep "\"client\":null,\"split\":null,\"metric\":\"$2\"" "$1" |
		sed 's/.*"round":\([0-9]*\),.*"value":\([^,]*\),.*/\1 \2/'
}

run_ok --threads 2 "$p" --set output.dir=a
series a/metrics.jsonl privacy.epsilon > a.eps
[ "$(wc -l < a.eps)" -eq 12 ] || die "expected 12 privacy.epsilon events, got $(wc -l < a.eps)"
awk 'NR > 1 && !($2 > prev) { bad = 1 } { prev = $2 } END { exit bad }' a.eps ||
	die "privacy.epsilon does not increase every round: $(tr '\n' ' ' < a.eps)"
awk '$1 != NR { exit 1 }' a.eps || die "privacy.epsilon is not reported once a round"
# The classic conversion is never below the improved one; δ is recorded.
series a/metrics.jsonl privacy.epsilon_classic > a.cls
paste a.eps a.cls | awk '!($4 >= $2) { exit 1 }' || die "epsilon_classic below epsilon"
[ "$(series a/metrics.jsonl privacy.delta | head -n 1)" = "1 1.0000000000000001e-05" ] ||
	die "privacy.delta: $(series a/metrics.jsonl privacy.delta | head -n 1)"
# q = fraction = 10 of 40 clients; central noise std zC/m = 1/10.
[ "$(series a/metrics.jsonl privacy.q | head -n 1)" = "1 0.25" ] || die "privacy.q"
[ "$(series a/metrics.jsonl privacy.noise_std | head -n 1)" = "1 0.10000000000000001" ] ||
	die "privacy.noise_std: $(series a/metrics.jsonl privacy.noise_std | head -n 1)"
# The run records its noise source: in the resolved pipeline and the log.
grep -q '"noise": "reproducible"' a/pipeline.json || die "resolved pipeline lacks the noise source"
grep -q "privacy gaussian: mode central.*noise reproducible" a/log.txt || die "log lacks the noise source"

# Interrupted once it has checkpointed round 3 or later (older checkpoints
# are pruned, so any one from round 3 on will do), then resumed to the end.
"$FEDRUN" -q --threads 2 "$p" --set output.dir=term --set rounds=100000 >/dev/null 2>term.err &
pid=$!
i=0
while [ $i -lt 600 ]; do
	case $(ls term/checkpoints 2>/dev/null | tail -n 1) in
	'' | round-00000[012].*) ;;
	*) break ;;
	esac
	sleep 0.05; i=$((i + 1))
done
kill -s TERM $pid
wait $pid
st=$?
[ "$st" -eq 130 ] || { cat term.err; die "SIGTERM: exit $st, expected 130"; }
done_round=$(ls term/checkpoints | tail -n 1 | sed 's/round-0*\([0-9]*\).*/\1/')
[ "$done_round" -ge 3 ] || die "no checkpoint before the signal"
# However far it got, finish six rounds later, and compare with an
# uninterrupted run of as many rounds.
total=$((done_round + 6))
run_ok --threads 1 --resume "$p" --set output.dir=term --set rounds=$total
run_ok --threads 2 "$p" --set output.dir=ref --set rounds=$total
cmp ref/final.safetensors term/final.safetensors || die "SIGTERM + resume gives another model"
series ref/metrics.jsonl privacy.epsilon > ref.eps
series term/metrics.jsonl privacy.epsilon > term.eps
[ "$(wc -l < ref.eps)" -eq "$total" ] || die "reference: $(wc -l < ref.eps) epsilon events"
cmp ref.eps term.eps || die "resumed epsilon series differs: $(diff ref.eps term.eps | head -n 4)"
series ref/metrics.jsonl privacy.epsilon_classic > ref.cls
series term/metrics.jsonl privacy.epsilon_classic > term.cls
cmp ref.cls term.cls || die "resumed epsilon_classic series differs"

# Secure noise (the default): two runs differ, and say so; the privacy
# accounted is the same.
run_ok "$p" --set output.dir=s1 --set privacy.noise=secure
run_ok "$p" --set output.dir=s2 --set privacy.noise=secure
cmp -s s1/final.safetensors s2/final.safetensors && die "two runs with secure noise are identical"
grep -q '"noise": "secure"' s1/pipeline.json || die "resolved pipeline lacks the secure source"
grep -q "noise secure (ChaCha20" s1/log.txt || die "log lacks the secure source"
series s1/metrics.jsonl privacy.epsilon > s1.eps
cmp a.eps s1.eps || die "the accounting depends on the noise source"
# Leaving "noise" out gives secure noise, written back.
sed 's/, "noise": "reproducible"//' "$p" > default.json
grep -q reproducible default.json && die "test setup: noise key not removed"
run_ok default.json --set output.dir=d --set rounds=1
grep -q '"noise": "secure"' d/pipeline.json || die "the default noise source is not recorded"

# laplace: ε per round and by basic composition in total.
run_ok "$p" --set output.dir=lap --set rounds=5 \
	--set privacy='{"plugin": "laplace", "sigma": 0.5, "epsilon": 0.25, "noise": "reproducible"}'
[ "$(series lap/metrics.jsonl privacy.epsilon | tr '\n' ' ')" = "1 0.25 2 0.5 3 0.75 4 1 5 1.25 " ] ||
	die "laplace epsilon series: $(series lap/metrics.jsonl privacy.epsilon | tr '\n' ' ')"

# Nonsense is refused before anything runs.
"$FEDRUN" validate --set privacy.sigma=0.1 "$p" >/dev/null 2>err && die "central mode accepted sigma"
grep -q 'privacy.sigma: not used with mode "central"' err || { cat err; die "unclear message"; }
echo "privacy: epsilon $(tail -n 1 a.eps | cut -d' ' -f2) after 12 rounds; resumed runs identical; secure noise differs"
