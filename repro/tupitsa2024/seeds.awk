# SPDX-License-Identifier: Apache-2.0
# seeds.awk: one method's runs over several seeds (their metrics.csv files
# as arguments) summarised for results.sh.
#   -v bounds=5,100,150   cumulative client counts of the groups (group g
#                         holds clients bounds[g-1] .. bounds[g]-1)
#   -v names=G,D2,D3      the groups' names
#   -v curve=FILE         writes the mean over seeds per round, as a
#                         metrics.csv that fedrun-plot reads: err_group0 on
#                         valid, and meritfed's weight share per group
#                         (metrics share_NAME, no split)
# Prints one line: "err MEAN SD best MEAN share S1/S2/... seeds N", where err
# is meanest's err_group0 (||x - mu_target||^2) on the test split after the
# last round, best its lowest value on valid over rounds >= 1 (an oracle
# that knew when to stop), share meritfed's weights summed per group in the
# last round ("-" without meritfed), all means over seeds (SD: the sample
# standard deviation).
BEGIN {
	FS = ","
	ng = split(bounds, bd, ",")
	split(names, nm, ",")
}
FNR == 1 {
	nf++
	for (i = 1; i <= NF; i++) col[$i] = i
	best[nf] = ""
	next
}
{
	r = $col["round"] + 0
	m = $col["metric"]
	sp = $col["split"]
	v = $col["value"] + 0
	if (m == "err_group0" && sp == "test") {
		err[nf] = v
	} else if (m == "err_group0" && sp == "valid") {
		sum[r] += v
		cnt[r]++
		if (r > maxr) maxr = r
		if (r >= 1 && (best[nf] == "" || v < best[nf])) best[nf] = v
	} else if (m == "meritfed.weight") {
		c = $col["client"] + 0
		for (g = 1; g <= ng; g++)
			if (c < bd[g]) break
		if (g > ng) {
			print "seeds.awk: client " c " is beyond the groups " bounds > "/dev/stderr"
			exit 2
		}
		wsum[r, g] += v
		wr[r] = 1
		if (r > wlast[nf]) wlast[nf] = r
		last[nf, g, r] = v + last[nf, g, r]
		merit = 1
	}
}
END {
	if (nf == 0) exit 2
	for (k = 1; k <= nf; k++) {
		if (!(k in err)) {
			print "seeds.awk: run " k " has no err_group0 on test" > "/dev/stderr"
			exit 2
		}
		e += err[k]
		b += best[k]
	}
	e /= nf
	b /= nf
	for (k = 1; k <= nf; k++) ss += (err[k] - e) ^ 2
	sd = nf > 1 ? sqrt(ss / (nf - 1)) : 0
	share = "-"
	if (merit) {
		share = ""
		for (g = 1; g <= ng; g++) {
			t = 0
			for (k = 1; k <= nf; k++) t += last[k, g, wlast[k]]
			share = share (g > 1 ? "/" : "") sprintf("%.3f", t / nf)
		}
	}
	printf "err %.6g %.6g best %.6g share %s seeds %d\n", e, sd, b, share, nf
	if (curve != "") {
		print "round,client,split,metric,value,wall" > curve
		for (r = 0; r <= maxr; r++) {
			if (cnt[r]) printf "%d,,valid,err_group0,%.9g,0\n", r, sum[r] / cnt[r] > curve
			if (r in wr)
				for (g = 1; g <= ng; g++)
					printf "%d,,,share_%s,%.9g,0\n", r, nm[g], wsum[r, g] / nf > curve
		}
		close(curve)
	}
}
