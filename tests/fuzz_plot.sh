#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools/fedrun-plot with hostile text: every string that reaches gnuplot
# (titles, axis labels, legend labels, the output path, --yrange) must be
# taken as text, never as gnuplot commands or shell commands run by
# gnuplot's `!`, `system()`, backquotes, piped files ('<cmd', '|cmd') or
# macros. First targeted strings, then a bounded random fuzz from a fixed
# seed. Each attack tries to create the file "pwned" in the working
# directory. Skipped (77) without gnuplot.
set -u
top_srcdir=${top_srcdir:-${srcdir:-.}}
plot="$top_srcdir/tools/fedrun-plot"
case $plot in /*) ;; *) plot=$(pwd)/$plot ;; esac
command -v gnuplot >/dev/null 2>&1 || { echo "SKIP: gnuplot not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-plot.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
# gnuplot's `!` and popen run in its working directory: here
cd "$tmp" || exit 99
passed=0
failed=0
ok() {
	passed=$((passed + 1))
	echo "ok - $1"
}
not_ok() {
	failed=$((failed + 1))
	echo "FAIL - $1"
}

mkdir run
cat >run/metrics.csv <<'EOF'
round,client,split,metric,tensor,value,bytes_push,bytes_pull,wall,model
0,,valid,loss,,6.5,0,0,0.250,
1,,valid,loss,,5.5,0,0,1.500,
2,,valid,loss,,4.25,0,0,2.750,
EOF
printf 'model\tcli\tgit\nserver\t10.5\t11\nweb\t12\t9\n' >table.tsv

# safe NAME ARGS...: fedrun-plot ARGS creates no marker and either draws
# (exit 0, nothing on stderr) or refuses with one line on stderr that is
# not a gnuplot error.
safe() {
	name=$1
	shift
	rm -f pwned
	sh "$plot" "$@" >out.log 2>err.log
	st=$?
	if [ -e pwned ]; then
		not_ok "$name: a command ran (pwned exists)"
	elif [ $st -eq 0 ] && [ -s err.log ]; then
		not_ok "$name: exit 0 with messages"
		sed 's/^/# /' err.log
	elif [ $st -ne 0 ] && { [ "$(wc -l <err.log)" -ne 1 ] || grep -q 'gnuplot failed' err.log; }; then
		not_ok "$name: exit $st"
		sed 's/^/# /' err.log
	else
		ok "$name (exit $st)"
	fi
}
# draws NAME ARGS...: like safe, and the plot must succeed
draws() {
	name=$1
	shift
	safe "$name" "$@"
	[ $st -eq 0 ] || { not_ok "$name: did not draw"; sed 's/^/# /' err.log; }
}
# svg_has FILE TEXT: the SVG holds <text>TEXT</text> (TEXT as XML text)
svg_has() {
	if grep -qF "<text>$2</text>" "$1"; then ok "$1 shows '$2' literally"; else not_ok "$1 lacks <text>$2</text>"; fi
}

nl='
'
cr=$(printf '\r')
tab='	'
# Hostile strings: each would run `touch pwned` if spliced into gnuplot's
# input (as a command after a line break, in a string's quote, ...).
set -- \
	"a${nl}!touch pwned${nl}#" \
	"x'${nl}!touch pwned${nl}#" \
	"x\"${nl}!touch pwned${nl}#" \
	"x'; system(\"touch pwned\"); y='" \
	"x\"; system(\"touch pwned\"); y=\"" \
	"x\\\"; system(\"touch pwned\"); y=\"\\" \
	"\`touch pwned\`" \
	"x'\`touch pwned\`'" \
	"x\"\`touch pwned\`\"" \
	"trailing backslash \\" \
	"\\${nl}!touch pwned" \
	"@ARG0 @GPVAL_PWD" \
	"${cr}!touch pwned${cr}" \
	"a${tab}b${cr}c$(printf '\001\002\033[31m\177')d" \
	"$(printf 'bad utf-8 \377\376\300\200 \342\202')" \
	"\$(touch pwned) ; touch pwned"
i=0
for s in "$@"; do
	i=$((i + 1))
	draws "curve --title #$i" curve --title "$s" -o "c$i" run
	draws "curve --xlabel #$i" curve --xlabel "$s" -o "c$i" run
	draws "curve --ylabel #$i" curve --ylabel "$s" -o "c$i" run
	draws "bars --title --xlabel --ylabel #$i" bars --title "$s" --xlabel "$s" --ylabel "$s" -o "b$i" table.tsv
	# a legend label holds neither a tab nor a line break (nor "=", which
	# ends it): such a label is refused, any other is drawn
	case $s in
	*"$tab"* | *"$nl"*) safe "curve label #$i" curve -o "c$i" "$s=run" ;;
	*=*) ;;
	*) draws "curve label #$i" curve -o "c$i" "$s=run" ;;
	esac
done
# bars' legend: the table's row labels
printf 'model\tcli\n%s\t1\n%s\t2\n%s\t3\n' "x'\`touch pwned\`" "x\"; system(\"touch pwned\"); y=\"" \
	"\\\" @ARG0 \`touch pwned\`" >hostile.tsv
draws "bars: hostile row labels" bars -o bh hostile.tsv
draws "bars --transpose: hostile row labels" bars --transpose -o bh hostile.tsv

# The output path names files that gnuplot opens for writing and reading:
# gnuplot takes '|cmd' and '<cmd' as pipes to a command.
draws "-o '|cmd'" curve -o '|touch pwned;x' run
draws "-o '<cmd'" curve -o '<touch pwned;x' run
draws "bars -o '|cmd'" bars -o '|touch pwned;x' table.tsv
draws "-o with quotes and a line break" curve -o "o'\"${nl}!touch pwned${nl}#" run
draws "-o with a backslash and backquotes" curve -o 'o\`touch pwned`\' run
if [ -s 'o\`touch pwned`\.dat' ] && [ -s 'o\`touch pwned`\.svg' ]; then ok "-o with a backslash: the files named as given"; else not_ok "-o with a backslash: the files named as given"; fi
mkdir '<touch pwned;d'
draws "-o in a directory '<cmd'" curve -o '<touch pwned;d/x' run
# --yrange is spliced into a range: anything but numbers and * is refused
safe "--yrange with a command" curve --yrange "1:2]${nl}!touch pwned${nl}#" -o y run
if [ $st -eq 2 ]; then ok "--yrange with a command: usage error"; else not_ok "--yrange with a command: exit $st, not 2"; fi
safe "--yrange with a system()" curve --yrange '0:system("touch pwned")' -o y run
draws "--yrange numbers" curve --yrange '-1.5e0:+10' -o y run
draws "--yrange automatic sides" curve --yrange '*:' -o y run

# Labels are literal: no enhanced-text markup, and UTF-8 is kept.
draws "literal markup" curve --title 'a_b^c {d} @e &f ~g' --xlabel 'x_1' --ylabel '10^3' -o lit 'm_1^2=run'
svg_has lit.svg 'a_b^c {d} @e &amp;f ~g'
svg_has lit.svg 'x_1'
svg_has lit.svg '10^3'
svg_has lit.svg 'm_1^2'
utf=$(printf 'perte \303\251valu\303\251e \342\200\224 \346\227\245\346\234\254 \360\237\230\200')
draws "UTF-8 title" curve --title "$utf" -o utf run
svg_has utf.svg "$utf"

# ---- random strings ----
# 200 strings of 1-16 random bytes (no NUL: argv cannot hold it), a third
# of them drawn from gnuplot's and the shell's special characters, from a
# fixed seed. They go five to a plot: title, x and y labels and two legend
# labels of curve; for bars the title, a legend label (a row of the table)
# and the output file's name. Written as \0ooo escapes, one string a line.
awk 'BEGIN {
	srand(20261125)
	special = "\n\r\t!\"#$%&'\''()*;<>?@[\\]^_`{|}~"
	for (n = 0; n < 200; n++) {
		len = 1 + int(rand() * 16); s = ""
		for (k = 0; k < len; k++) {
			if (rand() < 0.33) {
				j = 1 + int(rand() * length(special))
				c = index("\n\r\t", substr(special, j, 1))
				b = c ? (c == 1 ? 10 : c == 2 ? 13 : 9) : -1
				if (b < 0) for (b = 32; b < 127; b++) if (sprintf("%c", b) == substr(special, j, 1)) break
			} else b = 1 + int(rand() * 255)
			s = s sprintf("\\0%03o", b)
		}
		print s
	}
}' >random.txt
# unescape LINE: the bytes (a trailing line break kept)
unescape() {
	u=$(printf '%b.' "$1")
	u=${u%.}
}
# a legend label drops what a label cannot hold; a file name drops "/"
label_of() { unescape "$1"; u=$(printf '%s.' "$u" | tr -d '\t\n=' | sed 's/\r$//'); u=${u%.}; [ -n "$u" ] || u=L; }
rounds=0 fuzz_failed=$failed
while read -r a && read -r b && read -r c && read -r d && read -r e; do
	rounds=$((rounds + 1))
	unescape "$a"; sa=$u
	unescape "$b"; sb=$u
	unescape "$c"; sc=$u
	label_of "$d"; sd=$u
	label_of "$e"; se=$u
	[ "$sd" != "$se" ] || se="$se 2"
	draws "fuzz curve $rounds" curve --title "$sa" --xlabel "$sb" --ylabel "$sc" -o "f" "$sd=run" "$se=run"
	# bars: a row label (no tab, line break or trailing CR; not starting
	# with "#", a comment, nor blank, the table's end) and the output's name
	label_of "$b"
	printf 'model\tcli\nr%s\t1\nother\t2\n' "$u" >fuzz.tsv
	unescape "$c"
	name=$(printf 'f%s.' "$u" | tr -d '/')
	name=${name%.}
	draws "fuzz bars $rounds" bars --title "$sa" --ylabel "$se" -o "$name" fuzz.tsv
done <random.txt
if [ $rounds -eq 40 ]; then ok "fuzz: 40 rounds of 5 strings"; else not_ok "fuzz: $rounds rounds, not 40"; fi
[ "$failed" -eq "$fuzz_failed" ] || echo "# the strings: $tmp/random.txt (seed in this script)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
