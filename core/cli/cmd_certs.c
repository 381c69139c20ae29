/* SPDX-License-Identifier: Apache-2.0 */
/* `fedrun certs`: a project's certificate authority and one certificate per
 * institution, for runs across institutions over mutual TLS (the server and
 * every client show a certificate of the project's CA; a client is known by
 * its certificate's common name). As NVIDIA FLARE's provisioning does, one
 * directory holds the CA; each institution gets its own key and certificate
 * and the CA's certificate, never the CA's key.
 *
 *   DIR/ca.key, ca.crt        the CA (init)
 *   DIR/crl.pem, revoked.tsv  the revocation list and what it lists
 *   DIR/server.key, .crt      the server's (server HOST...)
 *   DIR/clients/NAME.key,.crt an institution's (client NAME)
 *
 * ECDSA P-256 keys, SHA-256 signatures, X.509 v3 with the extensions a TLS
 * peer checks (basic constraints, key usage, extended key usage, subject
 * alternative names, key identifiers), 128-bit random serial numbers.
 * Nothing is ever overwritten: a key or certificate is written to a
 * temporary file and linked to its name, which fails if the name exists;
 * keys are mode 0600. See fedrun-certs(1). */
#include "config.h"
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"
#include "cmd_certs.h"

#ifdef HAVE_OPENSSL
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#endif

static void usage(FILE *fp)
{
	fputs("Usage: fedrun certs init [--name PROJECT] [--days N] DIR\n"
	      "       fedrun certs server [--days N] [--backdate N] DIR HOST...\n"
	      "       fedrun certs client [--days N] [--backdate N] DIR NAME\n"
	      "       fedrun certs revoke [--days N] DIR NAME\n"
	      "       fedrun certs crl [--days N] DIR\n"
	      "Makes a project's certificate authority in DIR (init), the server's key and\n"
	      "certificate for its host names or addresses (server), an institution's key\n"
	      "and certificate with common name NAME (client), and the list of revoked\n"
	      "certificates, DIR/crl.pem (revoke, crl). Nothing is overwritten.\n"
	      "\n"
	      "  -n, --name PROJECT  the organisation in every subject (init; default fedrun)\n"
	      "  -d, --days N        validity in days (init 3650, server and client 365;\n"
	      "                      revoke and crl: until the list's next update, 30)\n"
	      "  -b, --backdate N    the validity starts N days ago (default 0)\n"
	      "  -h, --help          this help\n"
	      "\n"
	      "Exit status: 0 written, 1 a failure writing or signing, 2 usage or input error.\n"
	      "See fedrun-certs(1).\n",
	      fp);
}

static int say(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(int status, const char *fmt, ...)
{
	va_list ap;
	fputs("fedrun certs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return status;
}

#ifndef HAVE_OPENSSL
int fedrun_cmd_certs(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage(stdout);
		return 0;
	}
	return say(2, "this fedrun was built without OpenSSL's libcrypto (install libssl-dev "
		      "and run configure again)");
}
#else

#define DAY 86400L

/* The last OpenSSL error, for a message. */
static const char *ssl_err(void)
{
	static char buf[256];
	unsigned long e = ERR_get_error();
	if (!e)
		return "unknown error";
	ERR_error_string_n(e, buf, sizeof buf);
	ERR_clear_error();
	return buf;
}

static char *path_of(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* Writes what `put` writes to a new file at `path` with `mode`: through a
 * temporary file in the same directory, then link(2), so that an existing
 * file is never replaced (replace: rename(2), which does). */
static int write_file(const char *path, mode_t mode, bool replace,
		      int (*put)(FILE *, const void *), const void *obj)
{
	size_t n = strlen(path) + 16;
	char *tmp = malloc(n);
	if (!tmp)
		return say(1, "out of memory");
	snprintf(tmp, n, "%s.tmp.XXXXXX", path);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		int e = errno;
		free(tmp);
		return say(1, "%s: cannot create a file beside it: %s", path, strerror(e));
	}
	int status = 0;
	FILE *fp = fchmod(fd, mode) == 0 ? fdopen(fd, "w") : NULL;
	if (!fp) {
		status = say(1, "%s: %s", tmp, strerror(errno));
		close(fd);
	} else {
		errno = 0;
		int ok = put(fp, obj);
		if (fflush(fp) != 0 || fsync(fileno(fp)) != 0)
			ok = 0;
		int e = errno;
		if (fclose(fp) != 0)
			ok = 0;
		if (!ok)
			status = say(1, "%s: writing failed: %s", tmp, e ? strerror(e) : ssl_err());
	}
	if (status == 0 && replace && rename(tmp, path) != 0)
		status = say(1, "%s: %s", path, strerror(errno));
	if (status == 0 && !replace && link(tmp, path) != 0)
		status = errno == EEXIST ? say(2, "%s: exists; fedrun certs never overwrites a file", path)
					 : say(1, "%s: %s", path, strerror(errno));
	if (status != 0 || !replace)
		unlink(tmp);
	free(tmp);
	return status;
}

static int put_key(FILE *fp, const void *k)
{
	return PEM_write_PrivateKey(fp, (EVP_PKEY *)k, NULL, NULL, 0, NULL, NULL);
}

static int put_cert(FILE *fp, const void *x)
{
	return PEM_write_X509(fp, (X509 *)x);
}

static int put_crl(FILE *fp, const void *c)
{
	return PEM_write_X509_CRL(fp, (X509_CRL *)c);
}

static int put_text(FILE *fp, const void *s)
{
	return fputs(s, fp) >= 0;
}

/* Writes DIR/BASE.key and DIR/BASE.crt, the key first; a refused
 * certificate takes its new key away again. */
static int write_pair(const char *dir, const char *base, EVP_PKEY *key, X509 *cert)
{
	size_t n = strlen(base) + 5;
	char *kname = malloc(n), *cname = malloc(n);
	char *kp = NULL, *cp = NULL;
	int status = 0;
	if (kname && cname) {
		snprintf(kname, n, "%s.key", base);
		snprintf(cname, n, "%s.crt", base);
		kp = path_of(dir, kname);
		cp = path_of(dir, cname);
	}
	if (!kp || !cp) {
		status = say(1, "out of memory");
	} else if (access(cp, F_OK) == 0) {
		status = say(2, "%s: exists; fedrun certs never overwrites a file", cp);
	} else if ((status = write_file(kp, 0600, false, put_key, key)) == 0) {
		if ((status = write_file(cp, 0644, false, put_cert, cert)) != 0)
			unlink(kp);
		else
			printf("%s\n%s\n", kp, cp);
	}
	free(kname);
	free(cname);
	free(kp);
	free(cp);
	return status;
}

static EVP_PKEY *read_key(const char *path, int *status)
{
	FILE *fp = fopen(path, "r");
	if (!fp) {
		*status = say(2, "%s: %s", path, strerror(errno));
		return NULL;
	}
	EVP_PKEY *k = PEM_read_PrivateKey(fp, NULL, NULL, NULL);
	fclose(fp);
	if (!k)
		*status = say(2, "%s: not a PEM private key (%s)", path, ssl_err());
	return k;
}

static X509 *read_cert(const char *path, int *status)
{
	FILE *fp = fopen(path, "r");
	if (!fp) {
		*status = say(2, "%s: %s", path, strerror(errno));
		return NULL;
	}
	X509 *x = PEM_read_X509(fp, NULL, NULL, NULL);
	fclose(fp);
	if (!x)
		*status = say(2, "%s: not a PEM certificate (%s)", path, ssl_err());
	return x;
}

/* The CA of DIR: its key and certificate, which must belong together. */
static int read_ca(const char *dir, EVP_PKEY **key, X509 **cert)
{
	char *kp = path_of(dir, "ca.key"), *cp = path_of(dir, "ca.crt");
	int status = 0;
	*key = NULL;
	*cert = NULL;
	if (!kp || !cp)
		status = say(1, "out of memory");
	else if ((*cert = read_cert(cp, &status)) && (*key = read_key(kp, &status)) &&
		 X509_check_private_key(*cert, *key) != 1)
		status = say(2, "%s does not belong to %s", kp, cp);
	if (status != 0) {
		EVP_PKEY_free(*key);
		X509_free(*cert);
		*key = NULL;
		*cert = NULL;
		ERR_clear_error();
	}
	free(kp);
	free(cp);
	return status;
}

/* The organisation of the CA's subject, for its certificates' subjects. */
static int project_of(X509 *ca, char *buf, size_t n)
{
	return X509_NAME_get_text_by_NID(X509_get_subject_name(ca), NID_organizationName, buf,
					 (int)n) > 0;
}

struct ext {
	int nid;
	const char *value;
};

/* A certificate for `key` with subject O=project, CN=cn, signed by
 * (ca_cert, ca_key), or self-signed when ca_cert is NULL; valid from
 * `backdate` days ago for `days` days. */
static X509 *make_cert(EVP_PKEY *key, const char *project, const char *cn, X509 *ca_cert,
		       EVP_PKEY *ca_key, long days, long backdate, const struct ext *ext,
		       size_t n_ext)
{
	X509 *x = X509_new();
	BIGNUM *bn = BN_new();
	X509_NAME *name = X509_NAME_new();
	unsigned char serial[16];
	bool ok = x && bn && name && RAND_bytes(serial, sizeof serial) == 1;
	if (ok) {
		/* RFC 5280 4.1.2.2: positive, at most 20 octets, not 0. */
		serial[0] = (unsigned char)((serial[0] & 0x7f) | 0x40);
		ok = BN_bin2bn(serial, sizeof serial, bn) &&
		     BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) &&
		     X509_set_version(x, X509_VERSION_3) &&
		     X509_time_adj_ex(X509_getm_notBefore(x), (int)-backdate, 0, NULL) &&
		     X509_time_adj_ex(X509_getm_notAfter(x), (int)(days - backdate), 0, NULL) &&
		     X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
						(const unsigned char *)project, -1, -1, 0) &&
		     X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
						(const unsigned char *)cn, -1, -1, 0) &&
		     X509_set_subject_name(x, name) &&
		     X509_set_issuer_name(x, ca_cert ? X509_get_subject_name(ca_cert) : name) &&
		     X509_set_pubkey(x, key);
	}
	X509V3_CTX ctx;
	X509V3_set_ctx(&ctx, ca_cert ? ca_cert : x, x, NULL, NULL, 0);
	for (size_t i = 0; ok && i < n_ext; i++) {
		X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, ext[i].nid, ext[i].value);
		ok = e && X509_add_ext(x, e, -1);
		X509_EXTENSION_free(e);
	}
	ok = ok && X509_sign(x, ca_key ? ca_key : key, EVP_sha256()) > 0;
	BN_free(bn);
	X509_NAME_free(name);
	if (!ok) {
		say(1, "making the certificate of %s failed: %s", cn, ssl_err());
		X509_free(x);
		return NULL;
	}
	return x;
}

static EVP_PKEY *new_key(void)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	if (!k)
		say(1, "making an ECDSA P-256 key failed: %s", ssl_err());
	return k;
}

/* A client name or the project: letters, digits, '.', '_', '-', not
 * starting with '.' or '-', at most 64 bytes (X.520's common name). */
static bool good_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64 || s[0] == '.' || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* A host name (RFC 1123 letters, digits, '-', '.'; at most 253 bytes) or an
 * IPv4 or IPv6 address: its subjectAltName entry into buf. */
static bool san_entry(const char *h, char *buf, size_t n)
{
	unsigned char addr[16];
	if (inet_pton(AF_INET, h, addr) == 1 || inet_pton(AF_INET6, h, addr) == 1) {
		snprintf(buf, n, "IP:%s", h);
		return true;
	}
	size_t len = strlen(h);
	if (len == 0 || len > 253 || h[0] == '-' || h[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = h[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-'))
			return false;
	}
	snprintf(buf, n, "DNS:%s", h);
	return true;
}

/* ---- the revocation list ---- */

/* DIR/revoked.tsv: a header line, then "SERIAL\tTIME\tNAME" a revoked
 * certificate (serial in hexadecimal, revocation time in seconds since the
 * epoch). DIR/crl.pem is made from it, signed by the CA. */
static int write_crl(const char *dir, EVP_PKEY *ca_key, X509 *ca_cert, const char *tsv,
		     long days)
{
	X509_CRL *crl = X509_CRL_new();
	ASN1_TIME *now = ASN1_TIME_new(), *next = ASN1_TIME_new();
	bool ok = crl && now && next && X509_CRL_set_version(crl, X509_CRL_VERSION_2) &&
		  X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca_cert)) &&
		  X509_time_adj_ex(now, 0, 0, NULL) && X509_time_adj_ex(next, (int)days, 0, NULL) &&
		  X509_CRL_set1_lastUpdate(crl, now) && X509_CRL_set1_nextUpdate(crl, next);
	const char *line = strchr(tsv, '\n'); /* past the header */
	while (ok && line && line[1]) {
		line++;
		char hex[64];
		long long when;
		if (sscanf(line, "%63[0-9A-Fa-f]\t%lld", hex, &when) != 2) {
			say(2, "%s/revoked.tsv: a line is not SERIAL<tab>TIME<tab>NAME", dir);
			ok = false;
			break;
		}
		BIGNUM *bn = NULL;
		X509_REVOKED *r = X509_REVOKED_new();
		ASN1_INTEGER *serial = NULL;
		ASN1_TIME *t = ASN1_TIME_new();
		ok = r && t && BN_hex2bn(&bn, hex) && (serial = BN_to_ASN1_INTEGER(bn, NULL)) &&
		     X509_REVOKED_set_serialNumber(r, serial) && ASN1_TIME_set(t, (time_t)when) &&
		     X509_REVOKED_set_revocationDate(r, t) && X509_CRL_add0_revoked(crl, r);
		if (!ok)
			X509_REVOKED_free(r);
		BN_free(bn);
		ASN1_INTEGER_free(serial);
		ASN1_TIME_free(t);
		line = strchr(line, '\n');
	}
	ok = ok && X509_CRL_sort(crl) && X509_CRL_sign(crl, ca_key, EVP_sha256()) > 0;
	int status = ok ? 0 : 1;
	if (!ok && ERR_peek_error())
		say(1, "making %s/crl.pem failed: %s", dir, ssl_err());
	char *p = path_of(dir, "crl.pem");
	if (ok && !p)
		status = say(1, "out of memory");
	else if (ok && (status = write_file(p, 0644, true, put_crl, crl)) == 0)
		printf("%s\n", p);
	free(p);
	ASN1_TIME_free(now);
	ASN1_TIME_free(next);
	X509_CRL_free(crl);
	return status;
}

/* The whole of a small text file, or NULL with a message. */
static char *slurp(const char *path, int *status)
{
	FILE *fp = fopen(path, "r");
	if (!fp) {
		*status = say(2, "%s: %s", path, strerror(errno));
		return NULL;
	}
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int c;
	while ((c = getc(fp)) != EOF) {
		if (len + 2 > cap) {
			cap = cap ? 2 * cap : 4096;
			char *b = realloc(buf, cap);
			if (!b) {
				free(buf);
				fclose(fp);
				*status = say(1, "out of memory");
				return NULL;
			}
			buf = b;
		}
		buf[len++] = (char)c;
	}
	bool err = ferror(fp);
	fclose(fp);
	if (err) {
		free(buf);
		*status = say(1, "%s: reading failed", path);
		return NULL;
	}
	if (!buf && !(buf = malloc(1))) {
		*status = say(1, "out of memory");
		return NULL;
	}
	buf[len] = 0;
	return buf;
}

static const char revoked_header[] = "serial\ttime\tname\n";

/* ---- the subcommands ---- */

static int cmd_init(const char *dir, const char *project, long days)
{
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return say(2, "%s: %s", dir, strerror(errno));
	char *cp = path_of(dir, "ca.crt"), *tp = path_of(dir, "revoked.tsv");
	if (!cp || !tp) {
		free(cp);
		free(tp);
		return say(1, "out of memory");
	}
	int status = 0;
	if (access(cp, F_OK) == 0)
		status = say(2, "%s: exists; fedrun certs never overwrites a file", cp);
	EVP_PKEY *key = status ? NULL : new_key();
	char cn[96];
	snprintf(cn, sizeof cn, "%s CA", project);
	static const struct ext ca_ext[] = {
	    {NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
	    {NID_key_usage, "critical,keyCertSign,cRLSign"},
	    {NID_subject_key_identifier, "hash"},
	    {NID_authority_key_identifier, "keyid:always"},
	};
	X509 *x = key ? make_cert(key, project, cn, NULL, NULL, days, 0, ca_ext, 4) : NULL;
	if (status == 0 && !x)
		status = 1;
	if (status == 0 && (status = write_pair(dir, "ca", key, x)) == 0 &&
	    (status = write_file(tp, 0644, false, put_text, revoked_header)) == 0)
		status = write_crl(dir, key, x, revoked_header, 30);
	EVP_PKEY_free(key);
	X509_free(x);
	free(cp);
	free(tp);
	return status;
}

/* server and client: a key and a certificate of DIR's CA. */
static int cmd_leaf(const char *dir, bool server, char **names, int n, long days, long backdate)
{
	EVP_PKEY *ca_key, *key = NULL;
	X509 *ca, *x = NULL;
	int status = read_ca(dir, &ca_key, &ca);
	if (status != 0)
		return status;
	char project[65] = "fedrun";
	project_of(ca, project, sizeof project);
	char *san = NULL, *sub = NULL;
	if (server) {
		size_t cap = 1;
		for (int i = 0; i < n; i++)
			cap += strlen(names[i]) + 8;
		san = calloc(1, cap);
		for (int i = 0; san && i < n; i++) {
			char e[300];
			if (!san_entry(names[i], e, sizeof e)) {
				status = say(2, "'%s' is neither a host name nor an IP address",
					     names[i]);
				break;
			}
			if (i)
				strcat(san, ",");
			strcat(san, e);
		}
		if (!san)
			status = say(1, "out of memory");
	} else {
		if (!good_name(names[0]))
			status = say(2, "client name '%s': letters, digits, '.', '_' and '-', not "
					"starting with '.' or '-', at most 64 bytes",
				     names[0]);
		else if (!(sub = path_of(dir, "clients")))
			status = say(1, "out of memory");
		else if (mkdir(sub, 0700) != 0 && errno != EEXIST)
			status = say(1, "%s: %s", sub, strerror(errno));
	}
	if (status == 0 && !(key = new_key()))
		status = 1;
	if (status == 0) {
		struct ext ext[] = {
		    {NID_basic_constraints, "critical,CA:FALSE"},
		    {NID_key_usage, "critical,digitalSignature"},
		    {NID_ext_key_usage, server ? "serverAuth" : "clientAuth"},
		    {NID_subject_key_identifier, "hash"},
		    {NID_authority_key_identifier, "keyid:always"},
		    {NID_subject_alt_name, san},
		};
		x = make_cert(key, project, names[0], ca, ca_key, days, backdate, ext,
			      server ? 6 : 5);
		if (!x)
			status = 1;
	}
	if (status == 0)
		status = server ? write_pair(dir, "server", key, x) : write_pair(sub, names[0], key, x);
	free(san);
	free(sub);
	EVP_PKEY_free(key);
	X509_free(x);
	EVP_PKEY_free(ca_key);
	X509_free(ca);
	return status;
}

/* revoke NAME (names NULL: crl, the list signed again). */
static int cmd_revoke(const char *dir, const char *name, long days)
{
	EVP_PKEY *ca_key;
	X509 *ca, *x = NULL;
	int status = read_ca(dir, &ca_key, &ca);
	if (status != 0)
		return status;
	char *tp = path_of(dir, "revoked.tsv"), *tsv = NULL, *cp = NULL, *hex = NULL;
	if (!tp)
		status = say(1, "out of memory");
	else if ((tsv = slurp(tp, &status)) && strncmp(tsv, revoked_header, strlen(revoked_header)))
		status = say(2, "%s: not a revocation list of fedrun certs", tp);
	if (status == 0 && name) {
		char base[80];
		snprintf(base, sizeof base, "clients/%s.crt", name);
		if (!good_name(name))
			status = say(2, "client name '%s' is not one fedrun certs makes", name);
		else if (!(cp = path_of(dir, base)))
			status = say(1, "out of memory");
		else if ((x = read_cert(cp, &status)) && X509_check_issued(ca, x) != X509_V_OK)
			status = say(2, "%s was not issued by %s/ca.crt", cp, dir);
	}
	if (status == 0 && x) {
		BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
		hex = bn ? BN_bn2hex(bn) : NULL;
		BN_free(bn);
		if (!hex)
			status = say(1, "out of memory");
	}
	if (status == 0 && hex) {
		size_t hl = strlen(hex);
		bool listed = false;
		for (const char *l = strchr(tsv, '\n'); l && l[1]; l = strchr(l + 1, '\n'))
			if (strncmp(l + 1, hex, hl) == 0 && l[1 + hl] == '\t')
				listed = true;
		if (listed) {
			fprintf(stderr, "fedrun certs: %s (serial %s) is revoked already\n", cp, hex);
		} else {
			size_t n = strlen(tsv) + hl + strlen(name) + 32;
			char *more = malloc(n);
			if (!more) {
				status = say(1, "out of memory");
			} else {
				snprintf(more, n, "%s%s\t%lld\t%s\n", tsv, hex, (long long)time(NULL),
					 name);
				free(tsv);
				tsv = more;
			}
		}
	}
	/* The list first, so that the CRL never names what it does not hold;
	 * a failed CRL is made again by `fedrun certs crl`. */
	if (status == 0 && name && (status = write_file(tp, 0644, true, put_text, tsv)) != 0)
		say(status, "%s: unchanged; %s not revoked", tp, name);
	if (status == 0)
		status = write_crl(dir, ca_key, ca, tsv, days);
	OPENSSL_free(hex);
	free(tp);
	free(tsv);
	free(cp);
	X509_free(x);
	EVP_PKEY_free(ca_key);
	X509_free(ca);
	return status;
}

static int parse_days(const char *opt, const char *s, long lo, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > 36500)
		return say(2, "%s: '%s' is not a whole number of days from %ld to 36500", opt, s, lo);
	*out = v;
	return 0;
}

int fedrun_cmd_certs(int argc, char **argv)
{
	static const struct option longopts[] = {{"name", required_argument, NULL, 'n'},
						 {"days", required_argument, NULL, 'd'},
						 {"backdate", required_argument, NULL, 'b'},
						 {"help", no_argument, NULL, 'h'},
						 {NULL, 0, NULL, 0}};
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	const char *sub = argv[1];
	bool init = strcmp(sub, "init") == 0, server = strcmp(sub, "server") == 0,
	     client = strcmp(sub, "client") == 0, revoke = strcmp(sub, "revoke") == 0,
	     crl = strcmp(sub, "crl") == 0;
	if (!init && !server && !client && !revoke && !crl)
		return say(2, "unknown subcommand '%s' (init, server, client, revoke, crl; see "
			      "fedrun certs --help)",
			   sub);
	const char *project = "fedrun";
	long days = init ? 3650 : (revoke || crl) ? 30 : 365, backdate = 0;
	int o;
	optind = 1;
	while ((o = getopt_long(argc - 1, argv + 1, "n:d:b:h", longopts, NULL)) != -1) {
		switch (o) {
		case 'n':
			if (!init)
				return say(2, "--name: only with init");
			if (!good_name(optarg))
				return say(2, "--name '%s': letters, digits, '.', '_' and '-', at most "
					      "64 bytes",
					   optarg);
			project = optarg;
			break;
		case 'd':
			if (parse_days("--days", optarg, 1, &days) != 0)
				return 2;
			break;
		case 'b':
			if (!server && !client)
				return say(2, "--backdate: only with server and client");
			if (parse_days("--backdate", optarg, 0, &backdate) != 0)
				return 2;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	int rest = argc - 1 - optind;
	char **args = argv + 1 + optind;
	int want_min = init || crl ? 1 : 2, want_max = server ? 64 : want_min;
	if (rest < want_min || rest > want_max) {
		usage(stderr);
		return say(2, "%s: %s", sub,
			   init || crl ? "one argument, DIR"
			   : server    ? "DIR and one or more host names or addresses"
				       : "DIR and NAME");
	}
	ERR_clear_error();
	if (init)
		return cmd_init(args[0], project, days);
	if (server || client)
		return cmd_leaf(args[0], server, args + 1, rest - 1, days, backdate);
	return cmd_revoke(args[0], revoke ? args[1] : NULL, days);
}
#endif
