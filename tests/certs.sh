#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# fedrun certs (core/cli/cmd_certs.c, fedrun-certs(1)), checked with the
# openssl command: the CA's and the certificates' subjects and extensions,
# chains that verify for their purpose (server for its host names and
# addresses, client for TLS clients, not the other way round), another
# project's CA refused, a backdated certificate expired, a revoked one
# refused with the CRL and the others not, key modes, keys that belong to
# their certificates, a mutual-TLS handshake between openssl s_server and
# s_client on loopback with the project's files (and its refusal of an
# expired client), and the refusals: an existing file (nothing changed),
# bad names and hosts, a missing CA, a CA key of another CA, bad options.
. "$top_srcdir/tests/lib.sh"
command -v openssl >/dev/null || { echo "no openssl command"; exit 77; }
if "$FEDRUN" certs init "$work/probe" 2>&1 | grep -q "built without OpenSSL"; then
	echo "fedrun built without OpenSSL: fedrun certs is not there"
	exit 77
fi
rm -rf "$work/probe"

ok() { # DESCRIPTION COMMAND...: the command must succeed
	d=$1
	shift
	"$@" >"$work/ok.out" 2>&1 || { cat "$work/ok.out"; die "$d"; }
}
no() { # DESCRIPTION COMMAND...: the command must fail
	d=$1
	shift
	if "$@" >"$work/no.out" 2>&1; then cat "$work/no.out"; die "$d"; fi
}
# refused STATUS MESSAGE-PART ARGS...: fedrun certs ARGS fails so.
refused() { refused_by certs "$@"; }
ext() { # CERT: its text form
	openssl x509 -in "$1" -noout -text
}

ca=$work/ca
ok "init" "$FEDRUN" certs init --name brown-study "$ca"
ok "server" "$FEDRUN" certs server "$ca" localhost 127.0.0.1 ::1
ok "client alice" "$FEDRUN" certs client "$ca" alice
ok "client bob" "$FEDRUN" certs client "$ca" bob
ok "client old" "$FEDRUN" certs client --backdate 10 --days 5 "$ca" old
"$FEDRUN" certs client "$ca" carol >out 2>err || die "client carol"
[ "$(cat out)" = "$ca/clients/carol.key
$ca/clients/carol.crt" ] || { cat out; die "client: stdout does not list the two files"; }

# Subjects and extensions.
ext "$ca/ca.crt" | grep -q "Subject: O = brown-study, CN = brown-study CA" || die "CA subject"
ext "$ca/ca.crt" | grep -A1 "Basic Constraints: critical" | grep -q "CA:TRUE, pathlen:0" || die "CA: basic constraints"
ext "$ca/ca.crt" | grep -A1 "Key Usage: critical" | grep -q "Certificate Sign, CRL Sign" || die "CA: key usage"
ext "$ca/server.crt" | grep -q "Subject: O = brown-study, CN = localhost" || die "server subject"
ext "$ca/server.crt" | grep -q "DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1" ||
	die "server: subject alternative names"
ext "$ca/server.crt" | grep -A1 "Extended Key Usage" | grep -q "TLS Web Server Authentication" || die "server EKU"
ext "$ca/clients/alice.crt" | grep -q "Subject: O = brown-study, CN = alice" || die "client subject"
ext "$ca/clients/alice.crt" | grep -A1 "Extended Key Usage" | grep -q "TLS Web Client Authentication" || die "client EKU"
ext "$ca/clients/alice.crt" | grep -A1 "Basic Constraints: critical" | grep -q "CA:FALSE" || die "client: CA:FALSE"
ext "$ca/clients/alice.crt" | grep -q "Public Key Algorithm: id-ecPublicKey" || die "client: not EC"
ext "$ca/clients/alice.crt" | grep -q "ASN1 OID: prime256v1" || die "client: not P-256"
ext "$ca/clients/alice.crt" | grep -q "Signature Algorithm: ecdsa-with-SHA256" || die "client: not SHA-256"
ext "$ca/clients/alice.crt" | grep -q "Version: 3" || die "client: not X.509 v3"
[ "$(openssl x509 -in "$ca/clients/alice.crt" -noout -serial)" != "$(openssl x509 -in "$ca/clients/bob.crt" -noout -serial)" ] ||
	die "two certificates with one serial"

# Keys: mode 0600, and each belongs to its certificate.
for k in ca server clients/alice clients/bob clients/old; do
	[ "$(stat -c %a "$ca/$k.key")" = 600 ] || die "$k.key: mode $(stat -c %a "$ca/$k.key")"
	[ "$(openssl pkey -in "$ca/$k.key" -pubout)" = "$(openssl x509 -in "$ca/$k.crt" -noout -pubkey)" ] ||
		die "$k.key does not belong to $k.crt"
done

# Chains and purposes.
ok "server verifies" openssl verify -CAfile "$ca/ca.crt" -purpose sslserver -verify_hostname localhost "$ca/server.crt"
ok "server verifies by address" openssl verify -CAfile "$ca/ca.crt" -purpose sslserver -verify_ip 127.0.0.1 "$ca/server.crt"
no "server for another host" openssl verify -CAfile "$ca/ca.crt" -purpose sslserver -verify_hostname example.org "$ca/server.crt"
ok "client verifies" openssl verify -CAfile "$ca/ca.crt" -purpose sslclient "$ca/clients/alice.crt"
no "client as a server" openssl verify -CAfile "$ca/ca.crt" -purpose sslserver "$ca/clients/alice.crt"
no "server as a client" openssl verify -CAfile "$ca/ca.crt" -purpose sslclient "$ca/server.crt"
no "a client certificate as a CA" openssl verify -CAfile "$ca/clients/alice.crt" "$ca/clients/bob.crt"
no "expired" openssl verify -CAfile "$ca/ca.crt" "$ca/clients/old.crt"
grep -q "certificate has expired" "$work/no.out" || { cat "$work/no.out"; die "expired: not for its date"; }
ok "the old one is the CA's but for its date" openssl verify -no_check_time -CAfile "$ca/ca.crt" "$ca/clients/old.crt"
ok "init other" "$FEDRUN" certs init "$work/other"
ok "client alice of other" "$FEDRUN" certs client "$work/other" alice
no "another project's certificate" openssl verify -CAfile "$ca/ca.crt" "$work/other/clients/alice.crt"

# Revocation: bob is refused with the list, alice is not; twice is a note.
ok "empty CRL" openssl verify -crl_check -CRLfile "$ca/crl.pem" -CAfile "$ca/ca.crt" "$ca/clients/bob.crt"
ok "revoke bob" "$FEDRUN" certs revoke "$ca" bob
no "revoked" openssl verify -crl_check -CRLfile "$ca/crl.pem" -CAfile "$ca/ca.crt" "$ca/clients/bob.crt"
grep -q "certificate revoked" "$work/no.out" || { cat "$work/no.out"; die "bob: not refused as revoked"; }
ok "alice with the list" openssl verify -crl_check -CRLfile "$ca/crl.pem" -CAfile "$ca/ca.crt" "$ca/clients/alice.crt"
[ "$(sed -n 2p "$ca/revoked.tsv" | cut -f1)" = "$(openssl x509 -in "$ca/clients/bob.crt" -noout -serial | sed 's/^serial=//')" ] ||
	{ cat "$ca/revoked.tsv"; die "revoked.tsv: not bob's serial"; }
[ "$(sed -n 2p "$ca/revoked.tsv" | cut -f3)" = bob ] || die "revoked.tsv: not bob's name"
cp "$ca/revoked.tsv" before.tsv
"$FEDRUN" certs revoke "$ca" bob >out 2>err || die "revoking twice failed"
grep -q "is revoked already" err || die "revoking twice: no note"
cmp -s before.tsv "$ca/revoked.tsv" || die "revoking twice changed revoked.tsv"
ok "crl" "$FEDRUN" certs crl --days 7 "$ca"
no "bob still revoked" openssl verify -crl_check -CRLfile "$ca/crl.pem" -CAfile "$ca/ca.crt" "$ca/clients/bob.crt"
openssl crl -in "$ca/crl.pem" -noout -text >crl.txt || die "crl.pem does not parse"
grep -q "Version 2" crl.txt || die "CRL: not version 2"
[ "$(grep -c "Serial Number:" crl.txt)" = 1 ] || die "CRL: not one entry"
ok "the list is the CA's" openssl crl -in "$ca/crl.pem" -noout -CAfile "$ca/ca.crt"

# A mutual-TLS handshake on loopback: openssl's server asks for a client
# certificate of the CA and fails the handshake otherwise; each side's
# verification of the other's chain is in its output.
handshake() { # CLIENT-CERT-BASE: status of an s_client session
	port=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom) % 40000 ))
	# not the last session's output: the wait below reads this file
	# before the background job's redirection empties it
	rm -f server.out
	openssl s_server -quiet -naccept 1 -accept "127.0.0.1:$port" -cert "$ca/server.crt" \
		-key "$ca/server.key" -CAfile "$ca/ca.crt" -Verify 1 -verify_return_error \
		>server.out 2>&1 &
	spid=$!
	i=0
	while ! grep -q . server.out 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
	sleep 0.3
	st=0
	echo hello | timeout 10 openssl s_client -no_ign_eof -connect "127.0.0.1:$port" \
		-verify_return_error -CAfile "$ca/ca.crt" -verify_hostname localhost \
		-cert "$1.crt" -key "$1.key" >client.out 2>&1 || st=$?
	# -naccept 1: the server ends after the session (and flushes what it
	# read); it is stopped only if it has not within 5 s.
	i=0
	while kill -0 "$spid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	return $st
}
if handshake "$ca/clients/alice"; then
	grep -A1 "^depth=0 O = brown-study, CN = alice" server.out | grep -q "^verify return:1" ||
		{ cat server.out client.out; die "handshake: the server did not verify alice's certificate"; }
	grep -A1 "^depth=0 O = brown-study, CN = localhost" client.out | grep -q "^verify return:1" ||
		{ cat server.out client.out; die "handshake: the client did not verify the server's certificate"; }
else
	cat server.out client.out
	die "mutual TLS with alice's certificate failed"
fi
# (Under TLS 1.3 the client's handshake ends before the server checks its
# certificate, so the refusal is the server's: its alert ends the session.)
handshake "$ca/clients/old" || :
grep -q "verify error:num=10:certificate has expired" server.out ||
	{ cat server.out client.out; die "expired client: the server did not refuse it for its date"; }
! grep -A1 "^depth=0 O = brown-study, CN = old" server.out | grep -q "^verify return:1" ||
	{ cat server.out client.out; die "expired client: the server accepted its certificate"; }

# Refusals: nothing written or changed.
cp "$ca/clients/alice.crt" alice.before
cp "$ca/clients/alice.key" alice.key.before
refused 2 "alice.crt: exists; fedrun certs never overwrites a file" client "$ca" alice
cmp -s alice.before "$ca/clients/alice.crt" && cmp -s alice.key.before "$ca/clients/alice.key" ||
	die "a refused client changed alice's files"
refused 2 "server.crt: exists" server "$ca" localhost
refused 2 "ca.crt: exists" init "$ca"
refused 2 "client name '../x'" client "$ca" ../x
refused 2 "client name '.hidden'" client "$ca" .hidden
refused 2 "client name 'a b'" client "$ca" "a b"
refused 2 "'bad host' is neither a host name nor an IP address" server "$work/other" "bad host"
[ ! -e "$work/other/server.crt" ] || die "a refused server wrote server.crt"
refused 2 "$work/none/ca.crt: No such file or directory" client "$work/none" alice
mkdir mixed
cp "$ca/ca.crt" mixed/ca.crt
cp "$work/other/ca.key" mixed/ca.key
refused 2 "mixed/ca.key does not belong to mixed/ca.crt" client mixed alice
echo "not a key" >mixed/ca.key
refused 2 "mixed/ca.key: not a PEM private key" client mixed alice
refused 2 "unknown subcommand 'frob'" frob "$ca"
refused 2 "--days: 'x' is not a whole number of days from 1 to 36500" client --days x "$ca" dave
refused 2 "--days: '0' is not a whole number" client --days 0 "$ca" dave
refused 2 "--backdate: only with server and client" revoke --backdate 3 "$ca" alice
refused 2 "--name: only with init" client --name x "$ca" dave
refused 2 "client: DIR and NAME" client "$ca"
refused 2 "revoke: DIR and NAME" revoke "$ca"
refused 2 "client name 'zed/' is not one fedrun certs makes" revoke "$ca" "zed/"
refused 2 "clients/zed.crt: No such file" revoke "$ca" zed
cp "$ca/clients/bob.crt" "$work/other/clients/bob.crt"
refused 2 "other/clients/bob.crt was not issued by $work/other/ca.crt" revoke "$work/other" bob
[ ! -e "$ca/clients/dave.crt" ] && [ ! -e "$ca/clients/dave.key" ] || die "a refused client wrote dave's files"
"$FEDRUN" certs --help | grep -q "^Usage: fedrun certs init" || die "--help"
echo "fedrun certs: all checks passed"
