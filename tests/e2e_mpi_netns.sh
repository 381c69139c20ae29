#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs over two "hosts": two network namespaces on this machine joined by
# a veth pair. mpirun starts in the first and launches the second rank in
# the other through an rsh agent that enters it; the ranks talk TCP over
# the veth only. The run gives the final model and metrics (less wall time) of the
# one-process run, and rank 0's log counts 2 ranks on 2 hosts. Skipped
# (77) without mpirun, without the transport plugin, when not root, or
# where namespaces or veth links cannot be made (no CAP_NET_ADMIN).
. "$top_srcdir/tests/lib.sh"
mpi_env # (its network settings are overridden on mpirun's command line)
[ "$(id -u)" = 0 ] || { echo "SKIP: not root"; exit 77; }
command -v ip >/dev/null 2>&1 || { echo "SKIP: no ip"; exit 77; }

ns0=fedrun-a$$
ns1=fedrun-b$$
# On exit: what a timeout left running in the namespaces, the namespaces,
# and (as lib.sh's trap did) the scratch directory.
cleanup() {
	for ns in $ns0 $ns1; do
		kill -9 $(ip netns pids $ns 2>/dev/null) 2>/dev/null
		ip netns del $ns 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT
# The veth is made inside the namespaces (no name in the host's), and goes
# away with them; so the fixed subnet clashes with no parallel run.
ip netns add $ns0 2>/dev/null && ip netns add $ns1 2>/dev/null &&
	ip -n $ns0 link add v0 type veth peer name v1 netns $ns1 2>/dev/null ||
	{ echo "SKIP: cannot make network namespaces and a veth pair"; exit 77; }
net=10.213.77
for i in 0 1; do
	eval ns=\$ns$i
	ip -n $ns addr add $net.$((i + 1))/24 dev v$i && ip -n $ns link set v$i up &&
		ip -n $ns link set lo up || die "cannot set up $ns"
done

# The rsh agent, called as "AGENT HOST COMMAND..." (as ssh is): the second
# host's address runs the command (the orted daemon) in the second
# namespace. Both sides keep the machine's hostname: Open MPI places ranks
# on nodes by the daemon that started them (one per hostfile line), not by
# hostname, so MPI_COMM_TYPE_SHARED still sees 2 hosts.
cat >agent <<EOF
#!/bin/sh
[ "\$1" = $net.2 ] || { echo "agent: unknown host \$1" >&2; exit 1; }
shift
exec ip netns exec $ns1 sh -c "\$*"
EOF
chmod +x agent
printf '%s slots=1\n' $net.1 $net.2 >hosts

p="$top_srcdir/tests/pipelines/dp_greater.json"
run_ok --threads 1 "$p" --set output.dir=ref
# The environment the remote rank needs (mpirun warns on -x of an unset
# variable).
set -- -x FEDRUN_PLUGIN_PATH
[ -n "${LD_LIBRARY_PATH:-}" ] && set -- "$@" -x LD_LIBRARY_PATH
timeout 120 ip netns exec $ns0 mpirun $mpi_x -np 2 --hostfile hosts --mca plm_rsh_agent "$work/agent" \
	--mca oob_tcp_if_include $net.0/24 --mca btl_tcp_if_include $net.0/24 --mca btl self,tcp \
	"$@" \
	"$FEDRUN" -q --threads 1 "$p" --set output.dir="$work/two" >out 2>&1 || {
	cat out
	die "mpirun over two namespaces failed"
}
cmp -s ref/final.safetensors two/final.safetensors || die "the final model differs"
sed 's/"wall":[^,}]*//' ref/metrics.jsonl >m1
sed 's/"wall":[^,}]*//' two/metrics.jsonl >m2
cmp -s m1 m2 || die "the metrics differ"
grep -q "2 ranks (.*2 ranks on 2 hosts)" two/log.txt || {
	grep ranks two/log.txt
	die "the log does not count 2 ranks on 2 hosts"
}
echo "2 ranks in 2 network namespaces: the one-process run"
