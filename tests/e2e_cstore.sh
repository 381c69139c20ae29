#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The clients' kept state on disk (clients.state_store, core/run/cstore.c):
#  - "disk" and "memory" give the same model, with kept Adam moments and
#    with push selection (each client's own parameters);
#  - a run resumed from a checkpoint gives the uninterrupted run's model;
#  - a checkpoint refers to the store's files by hard link, not by copy,
#    and keeps its round's state when a client trains again;
#  - a checkpoint whose file of a client is gone is refused, naming it;
#  - peak memory does not grow with the clients that trained (it does in
#    memory, which the check tells apart).
. "$top_srcdir/tests/lib.sh"
toy="$top_srcdir/examples/toy-fedavg.json"
adam='clients.optimizer={"name": "adam", "lr": 0.01}'
a="--set output.checkpoint_every=1 --set eval.every=2"
run_ok "$toy" --set "$adam" $a --set rounds=6 --set clients.state_store=memory --set output.dir=mem
run_ok "$toy" --set "$adam" $a --set rounds=6 --set clients.state_store=disk --set output.dir=disk
cmp mem/final.safetensors disk/final.safetensors || die "disk and memory stores give other models"
[ "$(ls disk/clients | grep -c '^[0-9]*\.safetensors$')" -eq 100 ] || die "not one file per client in disk/clients"
[ ! -e mem/clients ] || die "the memory store made a clients directory"
# By reference: the newest checkpoint's file is the store's (every client
# trained in round 6); the oldest kept one's is not (they trained since).
ck=disk/checkpoints
[ "$(stat -c %i disk/clients/7.safetensors)" = "$(stat -c %i $ck/round-000006.clients/7.safetensors)" ] ||
	die "the checkpoint of round 6 copied the store's file instead of linking it"
[ "$(stat -c %i disk/clients/7.safetensors)" != "$(stat -c %i $ck/round-000005.clients/7.safetensors)" ] ||
	die "the checkpoint of round 5 shares the file a later round replaced"
# Resumed runs, from each store.
for m in disk memory; do
	run_ok "$toy" --set "$adam" $a --set rounds=3 --set clients.state_store=$m --set output.dir=r$m
	run_ok --resume "$toy" --set "$adam" $a --set rounds=6 --set clients.state_store=$m --set output.dir=r$m
	cmp mem/final.safetensors r$m/final.safetensors || die "$m: the resumed run differs"
done
# What a killed writer leaves (a store file's and a checkpoint's links'
# temporaries) goes at resume; a file of the user's in clients/ stays.
dead=$(sh -c 'echo $$')
run_ok "$toy" --set "$adam" $a --set rounds=3 --set clients.state_store=disk --set output.dir=k
echo x >k/clients/5.safetensors.tmp.$dead
mkdir k/checkpoints/round-000004.clients.tmp.$dead
ln k/clients/5.safetensors k/checkpoints/round-000004.clients.tmp.$dead/5.safetensors
echo mine >k/clients/notes.txt
run_ok --resume "$toy" --set "$adam" $a --set rounds=6 --set clients.state_store=disk --set output.dir=k
[ ! -e k/clients/5.safetensors.tmp.$dead ] || die "a store file's temporary was left"
[ ! -e k/checkpoints/round-000004.clients.tmp.$dead ] || die "a checkpoint's temporary links were left"
[ "$(cat k/clients/notes.txt)" = mine ] || die "a file of the user's in clients/ went"
cmp mem/final.safetensors k/final.safetensors || die "the resume after the cleanup differs"
# Push selection: each client's parameters kept, and a resume.
p="$top_srcdir/tests/pipelines/dp_greater.json"
both='selector={"plugin": "dp_greater", "max_clients": 12, "direction": "both"}'
for m in memory disk; do
	run_ok "$p" --set "$both" --set clients.state_store=$m --set output.dir=p$m
done
cmp pmemory/final.safetensors pdisk/final.safetensors || die "push selection: the disk store differs"
run_ok "$p" --set "$both" --set clients.state_store=disk --set rounds=5 --set output.dir=pr
run_ok --resume "$p" --set "$both" --set clients.state_store=disk --set output.dir=pr
cmp pmemory/final.safetensors pr/final.safetensors || die "push selection: the resumed disk run differs"
# A checkpoint that lost a client's file: refused, naming the file.
rm disk/final.safetensors disk/checkpoints/round-000006.safetensors disk/checkpoints/round-000005.clients/42.safetensors
st=0
"$FEDRUN" -q --resume "$toy" --set "$adam" $a --set rounds=6 --set clients.state_store=disk \
	--set output.dir=disk 2>err || st=$?
[ "$st" -eq 2 ] || { cat err; die "a checkpoint without a client's file: exit $st, expected 2"; }
grep -q "client 42's kept state .*round-000005.clients/42.safetensors is missing" err ||
	{ cat err; die "the missing state file is not named"; }

# AddressSanitizer's quarantine keeps freed memory
if sanitized; then
	echo "client state store: disk = memory bit for bit, resumes, linked checkpoints (memory not measured under sanitizers)"
	exit 0
fi
# Memory: gru-lm with kept Adam moments (3.4 MB a client), 4 clients a
# round: 1 round against 8 (32 clients trained). On disk the peak stays;
# in memory it grows by the clients' state (the check can fail).
q="$top_srcdir/examples/quickstart.json"
g="--set data.partition.clients=40 --set clients.fraction=0.1 --set clients.epochs=1 --set eval.every=0"
g="$g --set model.embed=64 --set model.hidden=64"
# Only the plugins the run uses: the host opens every file of the plugin
# path to read its descriptor, and opening the CUDA backend maps CUDA's
# libraries (about 215 MB of resident memory here, varying by a megabyte
# from run to run), which hid the clients' state it measures.
mkdir pp
for p in gru_lm fedavg all; do ln -s "$FEDRUN_PLUGIN_PATH/$p.so" pp/; done
peak() { # STORE ROUNDS: peak RSS in KiB
	FEDRUN_PLUGIN_PATH=$work/pp "$top_builddir/tests/peak_rss" "$FEDRUN" -q --threads 1 "$q" $g --set "$adam" \
		--set clients.state_store=$1 --set rounds=$2 --set output.dir="g$1$2" \
		3>"rss$1$2" >/dev/null 2>"err$1$2" || { cat "err$1$2"; die "gru-lm, $1, $2 rounds failed"; }
	cat "rss$1$2"
}
d1=$(peak disk 1) d8=$(peak disk 8) m1=$(peak memory 1) m8=$(peak memory 8)
f=$(ls gdisk8/clients/*.safetensors | head -n 1)
[ -n "$f" ] || die "gru-lm: no state in gdisk8/clients"
state=$(($(stat -c %s "$f") / 1024))
[ "$m8" -gt $((m1 + 10 * state)) ] ||
	die "the check cannot tell: memory store $m1 KiB after 1 round, $m8 after 8 (state $state KiB a client)"
[ "$d8" -lt $((d1 + 4 * state)) ] ||
	die "peak memory grows with the clients that trained: $d1 KiB after 1 round, $d8 after 8 (state $state KiB a client)"
echo "client state store: disk = memory bit for bit, resumes, linked checkpoints; gru-lm peak $d1 -> $d8 KiB on disk, $m1 -> $m8 in memory ($state KiB a client)"
