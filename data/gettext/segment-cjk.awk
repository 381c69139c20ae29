# SPDX-License-Identifier: Apache-2.0
# segment-cjk.awk: puts a space on each side of every CJK character (Han
# ideographs, kana, bopomofo, CJK radicals and punctuation, full-width forms)
# and squeezes runs of spaces, so that a tokenizer splitting at spaces sees
# each character as a token. Chinese is written without spaces between
# words; this is the character-level segmentation that sacreBLEU's "zh"
# tokenizer applies before scoring (a Han character is a token, other text is
# tokenized as 13a does), so BLEU with the 13a tokenizer on segmented text
# approximates sacreBLEU -tok zh on the raw text. Byte-oriented: run with
# LC_ALL=C (mawk and gawk give the same output). Usage:
#   LC_ALL=C awk -f segment-cjk.awk < in.zh > out.zh
BEGIN {
	# UTF-8 of U+3000-U+9FFF (lead bytes E3-E9), U+2E80-U+2FFF (E2 BA-BF),
	# U+F900-U+FAFF (EF A4-AB) and U+FF00-U+FFEF (EF BC-BF).
	cjk = "([\343-\351][\200-\277][\200-\277]|\342[\272-\277][\200-\277]|\357[\244-\253\274-\277][\200-\277])"
}
{
	out = ""
	s = $0
	while (match(s, cjk)) {
		out = out substr(s, 1, RSTART - 1) " " substr(s, RSTART, RLENGTH) " "
		s = substr(s, RSTART + RLENGTH)
	}
	out = out s
	gsub(/ +/, " ", out)
	sub(/^ /, "", out)
	sub(/ $/, "", out)
	print out
}
