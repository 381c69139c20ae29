/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the "tagged" test backend (tests/backend_tagged.c), so that the
 * models' tests that run on it can trust it: it is found by name, its
 * device pointers crash when host code dereferences them, it refuses host
 * memory where device memory is required (and the reverse) naming the op
 * and the argument, struct members included, and it computes exactly what
 * the CPU backend computes. */
#include "config.h"
#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "fedrun/fedrun.h"

#if defined(__aarch64__) /* as tests/backend_tagged.c */
#define TAG (UINT64_C(1) << 55)
#else
#define TAG (UINT64_C(1) << 62)
#endif

static const struct fedrun_backend_ops *be;
static void *ctx;

static void setup(void)
{
	/* the models' plugins and the tagged backend, as the e2e tests set it */
	ck_assert_int_eq(setenv("FEDRUN_PLUGIN_PATH", PLUGIN_DIR ":" TAGGED_DIR, 1), 0);
	ck_assert_int_eq(fedrun_backend_find("tagged", &be), 0);
	ck_assert_int_eq(be->ctx_create(NULL, &ctx), 0);
}

static void teardown(void)
{
	be->ctx_destroy(ctx);
	ctx = NULL;
}

static void *dev(uint64_t bytes)
{
	void *p = NULL;
	ck_assert_int_eq(be->alloc(ctx, bytes, &p), 0);
	return p;
}

/* The last call failed with FEDRUN_EINVAL and a message holding both. */
#define REFUSED(call, op, arg)                                                                     \
	do {                                                                                       \
		ck_assert_int_eq((call), FEDRUN_EINVAL);                                           \
		ck_assert_msg(strstr(fedrun_error_message(), op) &&                                \
				  strstr(fedrun_error_message(), arg),                             \
			      "message '%s' lacks '%s' or '%s'", fedrun_error_message(), op, arg); \
	} while (0)

START_TEST(found_and_tagged)
{
	ck_assert_str_eq(be->name, "tagged");
	ck_assert_uint_ge(be->size, sizeof(struct fedrun_backend_ops));
	float *p = dev(64);
	ck_assert((uintptr_t)p & TAG);
	float h[16], back[16];
	for (int i = 0; i < 16; i++)
		h[i] = (float)i - 7.5f;
	ck_assert_int_eq(be->to_device(ctx, p, h, sizeof h), 0);
	ck_assert_int_eq(be->to_host(ctx, back, p, sizeof back), 0);
	ck_assert_mem_eq(h, back, sizeof h);
	/* interior pointers keep the tag */
	ck_assert_int_eq(be->zero(ctx, p + 8, 8 * sizeof(float)), 0);
	ck_assert_int_eq(be->to_host(ctx, back, p, sizeof back), 0);
	ck_assert(back[7] == h[7] && back[8] == 0.0f && back[15] == 0.0f);
	be->free_mem(ctx, p);
}
END_TEST

START_TEST(host_dereference_crashes)
{
	float *p = dev(64);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		volatile float *v = p;
		v[0] = 1.0f; /* what a model's host loop over device memory does */
		_exit(0);
	}
	int st = 0;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	/* killed by SIGSEGV, or (AddressSanitizer catches the fault first)
	 * exited with an error */
	ck_assert_msg((WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV) ||
			  (WIFEXITED(st) && WEXITSTATUS(st) != 0),
		      "a write through a device pointer did not crash (status %d)", st);
	be->free_mem(ctx, p);
}
END_TEST

START_TEST(copies_check_both_sides)
{
	float *p = dev(64), h[16] = {0};
	REFUSED(be->to_device(ctx, h, h, sizeof h), "to_device", "dst");
	REFUSED(be->to_device(ctx, p, p, sizeof h), "to_device", "host_src");
	REFUSED(be->to_host(ctx, p, p, sizeof h), "to_host", "host_dst");
	REFUSED(be->to_host(ctx, h, h, sizeof h), "to_host", "src");
	REFUSED(be->copy(ctx, p, h, sizeof h), "copy", "src");
	REFUSED(be->zero(ctx, h, sizeof h), "zero", "p");
	/* a context that is not one of this backend's */
	REFUSED(be->zero(NULL, p, sizeof h), "zero", "ctx");
	be->free_mem(ctx, p);
}
END_TEST

START_TEST(ops_refuse_host_memory)
{
	float *a = dev(4096), *b = dev(4096), *c = dev(4096), h[64] = {0};
	int32_t *ids = dev(64), hid[4] = {0};
	REFUSED(be->sgemm(ctx, false, false, 2, 2, 2, 1.0f, h, 2, b, 2, 0.0f, c, 2), "sgemm", "a");
	REFUSED(be->sgemm(ctx, false, false, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, h, 2), "sgemm", "c");
	REFUSED(be->embedding_forward(ctx, 4, 4, 4, hid, a, c), "embedding_forward", "ids");
	double loss;
	uint64_t count;
	REFUSED(be->softmax_xent(ctx, 4, 4, a, hid, &loss, &count, NULL), "softmax_xent",
		"targets");
	REFUSED(be->softmax_xent(ctx, 4, 4, a, ids, (double *)b, &count, NULL), "softmax_xent",
		"loss");
	/* the members of the GRU weights and gradients */
	struct fedrun_gru_dims d = {.steps = 1, .batch = 1, .input = 2, .hidden = 2};
	struct fedrun_gru_weights w = {a, b, NULL, h};
	REFUSED(be->gru_forward(ctx, &d, &w, c, NULL, c + 64, c + 128), "gru_forward", "w->b_hh");
	w.b_hh = NULL;
	struct fedrun_gru_grads g = {a, h, NULL, NULL};
	REFUSED(be->gru_backward(ctx, &d, &w, c, NULL, c, c, c, NULL, c, NULL, &g), "gru_backward",
		"g->w_hh");
	struct fedrun_attn_dims ad = {.batch = 1, .heads = 1, .tq = 2, .tk = 2, .dh = 2};
	REFUSED(be->attn_forward(ctx, &ad, a, a, a, hid, NULL, b, c), "attn_forward", "key_len");
	uint8_t mask[16];
	REFUSED(be->dropout_backward(ctx, 16, 0.5f, mask, a, b), "dropout_backward", "mask");
	struct fedrun_optim_cfg oc = {.kind = FEDRUN_OPTIM_SGD, .lr = 0.1, .momentum = 0.9};
	uint64_t step = 0;
	REFUSED(be->optim_step(ctx, &oc, 0.1, 16, a, b, h, &step, false), "optim_step", "state");
	REFUSED(be->prox_grad(ctx, 16, 0.5f, a, h, b), "prox_grad", "anchor");
	be->free_mem(ctx, a);
	be->free_mem(ctx, b);
	be->free_mem(ctx, c);
	be->free_mem(ctx, ids);
}
END_TEST

/* The CPU backend's results, bit for bit: a linear layer and an SGD step
 * with momentum on the same inputs. */
START_TEST(same_bits_as_cpu)
{
	const struct fedrun_backend_ops *cpu = fedrun_backend_cpu();
	enum { N = 5, IN = 7, OUT = 3 };
	float x[N * IN], w[OUT * IN], b[OUT], y_cpu[N * OUT], y_tag[N * OUT];
	struct fedrun_rng r;
	fedrun_rng_init(&r, 1, FEDRUN_RNG_DATA, 0, 0);
	for (int i = 0; i < N * IN; i++)
		x[i] = (float)fedrun_rng_normal(&r);
	for (int i = 0; i < OUT * IN; i++)
		w[i] = (float)fedrun_rng_normal(&r);
	for (int i = 0; i < OUT; i++)
		b[i] = (float)fedrun_rng_normal(&r);
	ck_assert_int_eq(cpu->linear_forward(NULL, N, IN, OUT, x, w, b, y_cpu), 0);
	float *dx = dev(sizeof x), *dw = dev(sizeof w), *db = dev(sizeof b),
	      *dy = dev(sizeof y_tag);
	ck_assert_int_eq(be->to_device(ctx, dx, x, sizeof x), 0);
	ck_assert_int_eq(be->to_device(ctx, dw, w, sizeof w), 0);
	ck_assert_int_eq(be->to_device(ctx, db, b, sizeof b), 0);
	ck_assert_int_eq(be->linear_forward(ctx, N, IN, OUT, dx, dw, db, dy), 0);
	ck_assert_int_eq(be->to_host(ctx, y_tag, dy, sizeof y_tag), 0);
	ck_assert_mem_eq(y_cpu, y_tag, sizeof y_cpu);

	struct fedrun_optim_cfg oc = {.kind = FEDRUN_OPTIM_SGD, .lr = 0.1, .momentum = 0.9};
	float p[IN], g[IN], s[IN] = {0}, pt[IN];
	memcpy(p, x, sizeof p);
	memcpy(g, w, sizeof g);
	float *dp = dev(sizeof p), *dg = dev(sizeof g), *ds = dev(sizeof s);
	ck_assert_int_eq(be->to_device(ctx, dp, p, sizeof p), 0);
	ck_assert_int_eq(be->to_device(ctx, dg, g, sizeof g), 0);
	uint64_t st_cpu = 0, st_tag = 0;
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(cpu->optim_step(NULL, &oc, 0.1, IN, p, g, s, &st_cpu, false), 0);
		ck_assert_int_eq(be->optim_step(ctx, &oc, 0.1, IN, dp, dg, ds, &st_tag, false), 0);
	}
	ck_assert_int_eq(be->to_host(ctx, pt, dp, sizeof pt), 0);
	ck_assert_mem_eq(p, pt, sizeof p);
	ck_assert_uint_eq(st_cpu, st_tag);
	void *all[] = {dx, dw, db, dy, dp, dg, ds};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		be->free_mem(ctx, all[i]);
}
END_TEST

START_TEST(no_device)
{
	ck_assert_int_eq(setenv("FEDRUN_TAGGED_NO_DEVICE", "1", 1), 0);
	void *c2 = NULL;
	int rc = be->ctx_create(NULL, &c2);
	unsetenv("FEDRUN_TAGGED_NO_DEVICE");
	ck_assert_int_lt(rc, 0);
	ck_assert_ptr_nonnull(strstr(fedrun_error_message(), "no device"));
}
END_TEST

static Suite *tagged_suite(void)
{
	Suite *s = suite_create("backend_tagged");
	TCase *tc = tcase_create("tagged");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, found_and_tagged);
	tcase_add_test(tc, host_dereference_crashes);
	tcase_add_test(tc, copies_check_both_sides);
	tcase_add_test(tc, ops_refuse_host_memory);
	tcase_add_test(tc, same_bits_as_cpu);
	tcase_add_test(tc, no_device);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tagged_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
