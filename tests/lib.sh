# SPDX-License-Identifier: Apache-2.0
# Helpers for the end-to-end test scripts. Each script runs in its own
# temporary directory; `die` fails the test with a message.
set -u
work=$(mktemp -d) || exit 99
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 99

die() {
	echo "FAIL: $*"
	exit 1
}

# refused_by SUBCOMMAND STATUS MESSAGE-PART ARGS...: fedrun SUBCOMMAND ARGS
# exits with STATUS, saying MESSAGE-PART (a fixed string) on stderr.
refused_by() {
	rb_cmd=$1 rb_want=$2 rb_msg=$3
	shift 3
	rb_st=0
	"$FEDRUN" "$rb_cmd" "$@" >"$work/refused.out" 2>"$work/refused.err" || rb_st=$?
	[ "$rb_st" = "$rb_want" ] || { cat "$work/refused.out" "$work/refused.err"; die "fedrun $rb_cmd $*: status $rb_st, not $rb_want"; }
	grep -qF -- "$rb_msg" "$work/refused.err" || { cat "$work/refused.err"; die "fedrun $rb_cmd $*: no message '$rb_msg'"; }
}

# run_ok ARGS...: runs fedrun, failing the test on a non-zero exit.
run_ok() {
	"$FEDRUN" -q "$@" >"$work/stdout" 2>"$work/stderr" || {
		cat "$work/stderr"
		die "fedrun $* exited $?"
	}
}

# newest DIR: the round of the newest checkpoint in DIR/checkpoints (0 if
# none). Waits poll this rather than one file's name: older checkpoints
# are pruned (output.keep), and a poll that missed round N's file while it
# existed would wait to its limit while the run went on.
newest() {
	ls "$1/checkpoints" 2>/dev/null | sed -n 's/^round-0*\([0-9][0-9]*\)\.safetensors$/\1/p' |
		sort -n | tail -n 1 | grep . || echo 0
}

# await_checkpoint DIR ROUND PID: waits until DIR has a checkpoint of
# ROUND or later (polled every 10 ms: some runs checkpoint every few tens
# of ms, and a test may allow two rounds past ROUND), until process PID has
# ended, or 120 s at most; the caller then signals PID and checks.
await_checkpoint() {
	ac_i=0
	while [ "$(newest "$1")" -lt "$2" ] && kill -0 "$3" 2>/dev/null && [ $ac_i -lt 12000 ]; do
		sleep 0.01
		ac_i=$((ac_i + 1))
	done
}

# metric FILE METRIC SPLIT: the value of the last server event.
metric() {
	grep "\"client\":null,\"split\":\"$3\",\"metric\":\"$2\"" "$1" | tail -n 1 |
		sed 's/.*"value":\([^,]*\),.*/\1/'
}

# example_target FILE N: sets target (a pipeline to run in place of the
# example FILE) and extra (fedrun options it needs). Examples that read
# corpora built by data/*/build.sh ("../data/..." paths) run on the real
# files when they have been built; otherwise on stand-ins: the pipeline is
# copied into a scratch tree ($work/mirror-N) where each missing data file
# is a small shipped corpus. Sets stood=1 when it did. With
# standins_always=1, stand-ins even where the corpora are built;
# standin_pairs: another stand-in text for translation pipelines.
example_target() {
	f=$1
	ex_n=$2
	stood=0
	standin="$top_srcdir/examples/data/toy-english/valid.txt" # 400 sentences
	# For translation pipelines: the same, or the caller's $standin_pairs
	pairs=${standin_pairs:-$standin}
	name=$(basename "$f")
	missing=
	for rel in $(grep -o '"\.\./data/[^"]*"' "$f" | tr -d '"'); do
		[ -e "$top_srcdir/examples/$rel" ] && [ "${standins_always:-0}" = 0 ] ||
			missing="$missing $rel"
	done
	target=$f
	extra=
	if [ -z "$missing" ] && grep -q '"src": *"' "$f"; then
		# A built corpus without one of the pipeline's files (a union
		# that repro/passban2022/run.sh makes, say): stand-ins too.
		src=$(sed -n 's/.*"src": *"\([^"]*\)".*/\1/p' "$f" | head -n 1)
		for rel in $(grep -o '"\.\./data/[^"]*"' "$f" | tr -d '"'); do
			for pre in $(grep -o '"\(train\|valid\|test\)": *"[^"]*"' "$f" | sed 's/.*: *"\(.*\)"/\1/'); do
				[ -e "$top_srcdir/examples/$rel/$pre.$src" ] || missing=$rel
			done
		done
	fi
	if [ -n "$missing" ] && grep -q '"src": *"' "$f"; then
		# A translation pipeline whose corpus directory (data.dir) is not
		# built: a stand-in tree with PREFIX.SRC and PREFIX.TGT for every
		# prefix of data.clients. Validation trains the SentencePiece
		# tokenizer, and the stand-in text is too small for the example's
		# vocabulary size, so this validation lowers that one key.
		mirror="$work/mirror-$ex_n"
		mkdir -p "$mirror/examples"
		cp "$f" "$mirror/examples/$name"
		src=$(sed -n 's/.*"src": *"\([^"]*\)".*/\1/p' "$f" | head -n 1)
		tgt=$(sed -n 's/.*"tgt": *"\([^"]*\)".*/\1/p' "$f" | head -n 1)
		for rel in $missing; do
			for pre in $(grep -o '"\(train\|valid\|test\)": *"[^"]*"' "$f" | sed 's/.*: *"\(.*\)"/\1/'); do
				mkdir -p "$(dirname "$mirror/examples/$rel/$pre")"
				cp "$pairs" "$mirror/examples/$rel/$pre.$src"
				cp "$pairs" "$mirror/examples/$rel/$pre.$tgt"
			done
		done
		target="$mirror/examples/$name"
		extra="--set model.tokenizer.vocab_size=64"
		stood=1
		missing=
	fi
	if [ -n "$missing" ]; then
		mirror="$work/mirror-$ex_n"
		mkdir -p "$mirror/examples"
		ln -s "$top_srcdir/examples/data" "$mirror/examples/data"
		cp "$f" "$mirror/examples/$name"
		pretrained=$(sed -n 's/.*"pretrained": *"\([^"]*\)".*/\1/p' "$f" | head -n 1)
		for rel in $missing; do
			mkdir -p "$(dirname "$mirror/examples/$rel")"
			case $rel in
			"$pretrained") # the encoder's model directory: a tiny BERT
				ln -s "$top_srcdir/tests/data/hf/bert" "$mirror/examples/$rel"
				extra="--set model.max_len=32" ;;
			*pos/*.tsv) # words<TAB>tags
				awk '{ t = ""; for (i = 1; i <= NF; i++) t = t (i > 1 ? " " : "") ($i == "the" ? "DET" : "X")
					print $0 "\t" t }' "$standin" >"$mirror/examples/$rel" ;;
			*.tsv) # text<TAB>label
				awk '{ print $0 "\t" (NR % 3 ? "a" : "b") }' "$standin" >"$mirror/examples/$rel" ;;
			*) cp "$standin" "$mirror/examples/$rel" ;;
			esac
		done
		# the files that are there (a corpus built, its model not yet)
		for rel in $(grep -o '"\.\./data/[^"]*"' "$f" | tr -d '"'); do
			[ -e "$mirror/examples/$rel" ] || [ ! -e "$top_srcdir/examples/$rel" ] ||
				{ mkdir -p "$(dirname "$mirror/examples/$rel")" &&
					ln -s "$(cd "$top_srcdir/examples" && pwd)/$rel" "$mirror/examples/$rel"; }
		done
		target="$mirror/examples/$name"
		stood=1
	fi
}

# sanitized: true in a build with the sanitizers (CFLAGS -fsanitize=...).
# There the tests skip what only checks that a model learns (a training run
# to convergence, ten to forty times slower than plain: the code it runs is
# the same as in their shorter runs, which stay) and what measures memory
# (AddressSanitizer's quarantine keeps freed memory); the plain build runs
# everything.
sanitized() {
	case "${FEDRUN_CFLAGS-}" in *-fsanitize=*) return 0 ;; esac
	return 1
}

# mpi_env: for the tests of runs over several processes. Skips (77) without
# mpirun or without the MPI transport plugin (configure --with-mpi); lets
# Open MPI run as root, oversubscribe the cores and keep to shared memory
# and loopback TCP. $mpi_x holds mpirun options for the ranks: in the
# sanitizer build, LeakSanitizer is off in them (Open MPI's components keep
# allocations until exit, in code LeakSanitizer cannot name at exit, so
# they cannot be suppressed); AddressSanitizer and UBSan stay on, and the
# one-process runs of the same tests keep the leak check.
mpi_env() {
	command -v mpirun >/dev/null 2>&1 || { echo "SKIP: no mpirun"; exit 77; }
	ls "$FEDRUN_PLUGIN_PATH"/transport_mpi.so >/dev/null 2>&1 ||
		{ echo "SKIP: no MPI transport plugin (configure --with-mpi)"; exit 77; }
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	export OMPI_MCA_rmaps_base_oversubscribe=1
	export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
	mpi_x="-x ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
}
