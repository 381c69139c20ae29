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

# run_ok ARGS...: runs fedrun, failing the test on a non-zero exit.
run_ok() {
	"$FEDRUN" -q "$@" >"$work/stdout" 2>"$work/stderr" || {
		cat "$work/stderr"
		die "fedrun $* exited $?"
	}
}

# metric FILE METRIC SPLIT: the value of the last server event.
metric() {
	grep "\"client\":null,\"split\":\"$3\",\"metric\":\"$2\"" "$1" | tail -n 1 |
		sed 's/.*"value":\([^,]*\),.*/\1/'
}
