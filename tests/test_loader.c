/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin loader: every refusal names the file and both values, and a
 * refused file is never half-loaded. Uses the test-only plugins in
 * tests/plugins/. */
#include "config.h"
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fedrun/fedrun.h"

static char path[1024];

static const char *plugin(const char *name)
{
	snprintf(path, sizeof path, "%s/%s.so", TEST_PLUGIN_DIR, name);
	return path;
}

/* Opens `name` and expects a refusal with `code` whose message holds the
 * file and every string in `parts` (NULL-terminated). */
static void expect_refusal(const char *name, int code, const char *const *parts)
{
	struct fedrun_registry *reg;
	ck_assert_int_eq(fedrun_registry_create("/nonexistent", &reg), 0);
	fedrun_registry_allow_files(reg, true);
	const struct fedrun_plugin *const *list = NULL;
	uint32_t n = 99;
	int rc = fedrun_registry_open(reg, plugin(name), &list, &n);
	ck_assert_int_eq(rc, code);
	const char *msg = fedrun_error_message();
	ck_assert_msg(strstr(msg, path) != NULL, "message lacks the file: %s", msg);
	for (; *parts; parts++)
		ck_assert_msg(strstr(msg, *parts) != NULL, "message lacks '%s': %s", *parts, msg);
	/* Not half-loaded: asking for a plugin in it fails the same way. */
	const struct fedrun_plugin *p = NULL;
	ck_assert_int_eq(fedrun_registry_find(reg, FEDRUN_KIND_AGGREGATOR, name, path, &p, NULL), code);
	ck_assert_ptr_null(p);
	fedrun_registry_destroy(reg);
}

/* A file named by a pipeline is loaded only when allowed (loading runs
 * the plugin's code): by default find refuses it, without loading it. */
START_TEST(test_files_need_allowing)
{
	struct fedrun_registry *reg;
	ck_assert_int_eq(fedrun_registry_create("/nonexistent", &reg), 0);
	const struct fedrun_plugin *p = NULL;
	const char *file = plugin("multi");
	ck_assert_int_eq(fedrun_registry_find(reg, FEDRUN_KIND_AGGREGATOR, "multi_one", file, &p, NULL),
			 FEDRUN_EPLUGIN);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "--allow-plugin-paths"));
	ck_assert_ptr_null(p);
	fedrun_registry_allow_files(reg, true);
	ck_assert_int_eq(fedrun_registry_find(reg, FEDRUN_KIND_AGGREGATOR, "multi_one", file, &p, NULL), 0);
	ck_assert_ptr_nonnull(p);
	fedrun_registry_destroy(reg);
}
END_TEST

START_TEST(test_refuse_major)
{
	char abi[32];
	snprintf(abi, sizeof abi, "ABI %d.%d", FEDRUN_ABI_MAJOR, FEDRUN_ABI_MINOR);
	const char *parts[] = {"ABI major 2", abi, NULL};
	expect_refusal("bad_major", FEDRUN_EABI, parts);
}
END_TEST

START_TEST(test_refuse_minor)
{
	char needs[32], newer[64];
	snprintf(needs, sizeof needs, "needs ABI %d.%d", FEDRUN_ABI_MAJOR, FEDRUN_ABI_MINOR + 7);
	snprintf(newer, sizeof newer, "newer than this fedrun's %d.%d", FEDRUN_ABI_MAJOR,
		 FEDRUN_ABI_MINOR);
	const char *parts[] = {needs, newer, NULL};
	expect_refusal("bad_minor", FEDRUN_EABI, parts);
}
END_TEST

START_TEST(test_refuse_size)
{
	const char *parts[] = {"descriptor of 16 bytes", "needs at least", NULL};
	expect_refusal("bad_size", FEDRUN_EABI, parts);
}
END_TEST

START_TEST(test_refuse_kind)
{
	const char *parts[] = {"'bad_kind'", "unknown kind 42", "1 to 6", NULL};
	expect_refusal("bad_kind", FEDRUN_EABI, parts);
}
END_TEST

START_TEST(test_refuse_missing_op)
{
	const char *parts[] = {"'bad_ops'", "required op 'aggregate'", NULL};
	expect_refusal("bad_ops", FEDRUN_EABI, parts);
}
END_TEST

START_TEST(test_refuse_half_stream)
{
	const char *parts[] = {"'half_stream'", "1 of the streaming ops", "all three or none", NULL};
	expect_refusal("half_stream", FEDRUN_EABI, parts);
}
END_TEST

START_TEST(test_refuse_half_gate)
{
	const char *parts[] = {"'half_gate'", "1 of the domain-expert ops", "lacks 'gate_size'",
			       "all four or none", NULL};
	expect_refusal("half_gate", FEDRUN_EABI, parts);
}
END_TEST

START_TEST(test_refuse_short_ops)
{
	const char *parts[] = {"ops table of 8 bytes", "needs at least", NULL};
	expect_refusal("short_ops", FEDRUN_EABI, parts);
}
END_TEST

START_TEST(test_refuse_no_entry)
{
	const char *parts[] = {"no symbol 'fedrun_plugin_entry'", NULL};
	expect_refusal("no_entry", FEDRUN_EABI, parts);
}
END_TEST

START_TEST(test_refuse_half_bad)
{
	/* The first plugin is fine; the second lacks destroy: the whole file
	 * is refused. */
	const char *parts[] = {"'half_two'", "required op 'destroy'", NULL};
	expect_refusal("half_bad", FEDRUN_EABI, parts);
}
END_TEST

START_TEST(test_refuse_not_elf)
{
	char dir[] = "/tmp/fedrun-loader-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char file[256];
	snprintf(file, sizeof file, "%s/garbage.so", dir);
	FILE *fp = fopen(file, "w");
	fputs("this is not a shared object\n", fp);
	fclose(fp);
	struct fedrun_registry *reg;
	ck_assert_int_eq(fedrun_registry_create(dir, &reg), 0);
	const struct fedrun_plugin *const *list;
	uint32_t n;
	ck_assert_int_eq(fedrun_registry_open(reg, file, &list, &n), FEDRUN_EPLUGIN);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), file));
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "cannot load"));
	/* Searching the directory reports the refused file in the message. */
	const struct fedrun_plugin *p;
	ck_assert_int_eq(fedrun_registry_find(reg, FEDRUN_KIND_AGGREGATOR, "x", NULL, &p, NULL),
			 FEDRUN_ENOENT);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "refused"));
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "garbage.so"));
	fedrun_registry_destroy(reg);
	unlink(file);
	rmdir(dir);
}
END_TEST

START_TEST(test_missing_file)
{
	struct fedrun_registry *reg;
	ck_assert_int_eq(fedrun_registry_create("/nonexistent", &reg), 0);
	fedrun_registry_allow_files(reg, true);
	const struct fedrun_plugin *const *list;
	uint32_t n;
	ck_assert_int_eq(fedrun_registry_open(reg, "/nonexistent/x.so", &list, &n), FEDRUN_EPLUGIN);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "/nonexistent/x.so"));
	fedrun_registry_destroy(reg);
}
END_TEST

START_TEST(test_multi_and_find)
{
	struct fedrun_registry *reg;
	ck_assert_int_eq(fedrun_registry_create("/nonexistent", &reg), 0);
	fedrun_registry_allow_files(reg, true);
	const struct fedrun_plugin *const *list;
	uint32_t n;
	ck_assert_int_eq(fedrun_registry_open(reg, plugin("multi"), &list, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(list[0]->name, "multi_one");
	ck_assert_str_eq(list[1]->name, "multi_two");
	const struct fedrun_plugin *p;
	const char *file;
	ck_assert_int_eq(fedrun_registry_find(reg, FEDRUN_KIND_AGGREGATOR, "multi_two", path, &p, &file), 0);
	ck_assert_str_eq(p->summary, "second of two");
	ck_assert_str_eq(file, path);
	/* Right file, wrong kind. */
	ck_assert_int_eq(fedrun_registry_find(reg, FEDRUN_KIND_MODEL, "multi_two", path, &p, NULL),
			 FEDRUN_ENOENT);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "no model plugin called 'multi_two'"));
	fedrun_registry_destroy(reg);
}
END_TEST

static int nseen, nrefused;

static void count(void *ud, const char *file, const struct fedrun_plugin *p, const char *error,
		  int shadowed)
{
	if (p)
		nseen++;
	else
		nrefused++;
}

START_TEST(test_search_path)
{
	/* $FEDRUN_PLUGIN_PATH comes first: its multi_one is found, and the
	 * refused test plugins are reported by scan, not fatal. */
	setenv("FEDRUN_PLUGIN_PATH", TEST_PLUGIN_DIR, 1);
	struct fedrun_registry *reg;
	ck_assert_int_eq(fedrun_registry_create("/nonexistent", &reg), 0);
	fedrun_registry_allow_files(reg, true);
	const struct fedrun_plugin *p;
	const char *file;
	ck_assert_int_eq(fedrun_registry_find(reg, FEDRUN_KIND_AGGREGATOR, "multi_one", NULL, &p, &file), 0);
	ck_assert_ptr_nonnull(strstr(file, "multi.so"));
	nseen = nrefused = 0;
	ck_assert_int_eq(fedrun_registry_scan(reg, count, NULL), 0);
	ck_assert_int_eq(nseen, 4); /* multi's two, wordrev, wordrev10 */
	ck_assert_int_eq(nrefused, 10); /* 9 rule breakers + half_bad */
	fedrun_registry_destroy(reg);
	unsetenv("FEDRUN_PLUGIN_PATH");
}
END_TEST

/* An ABI 1.0 model (ops table ending at loss_grad, garbage after it) loads,
 * and FEDRUN_MODEL_HAS does not see the 1.1 members in it; the ABI 1.1 one
 * has them. */
START_TEST(test_model_abi10)
{
	struct fedrun_registry *reg;
	ck_assert_int_eq(fedrun_registry_create("/nonexistent", &reg), 0);
	fedrun_registry_allow_files(reg, true);
	const struct fedrun_plugin *p;
	const char *file;
	ck_assert_int_eq(fedrun_registry_find(reg, FEDRUN_KIND_MODEL, "wordrev10",
					      TEST_PLUGIN_DIR "/wordrev10.so", &p, &file), 0);
	ck_assert_uint_eq(p->abi_minor, 0);
	const struct fedrun_model_ops *ops = p->ops;
	ck_assert(!FEDRUN_MODEL_HAS(ops, translate));
	ck_assert(!FEDRUN_MODEL_HAS(ops, client_name));
	ck_assert_int_eq(fedrun_registry_find(reg, FEDRUN_KIND_MODEL, "wordrev",
					      TEST_PLUGIN_DIR "/wordrev.so", &p, &file), 0);
	ops = p->ops;
	ck_assert(FEDRUN_MODEL_HAS(ops, translate));
	ck_assert(FEDRUN_MODEL_HAS(ops, client_name));
	fedrun_registry_destroy(reg);
}
END_TEST

static Suite *loader_suite(void)
{
	Suite *s = suite_create("loader");
	TCase *tc = tcase_create("loader");
	tcase_add_test(tc, test_files_need_allowing);
	tcase_add_test(tc, test_refuse_major);
	tcase_add_test(tc, test_refuse_minor);
	tcase_add_test(tc, test_refuse_size);
	tcase_add_test(tc, test_refuse_kind);
	tcase_add_test(tc, test_refuse_missing_op);
	tcase_add_test(tc, test_refuse_half_stream);
	tcase_add_test(tc, test_refuse_half_gate);
	tcase_add_test(tc, test_refuse_short_ops);
	tcase_add_test(tc, test_refuse_no_entry);
	tcase_add_test(tc, test_refuse_half_bad);
	tcase_add_test(tc, test_refuse_not_elf);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_multi_and_find);
	tcase_add_test(tc, test_search_path);
	tcase_add_test(tc, test_model_abi10);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(loader_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
