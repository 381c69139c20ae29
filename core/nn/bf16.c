/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU backend's bf16 matrix products (contexts of precision
 * FEDRUN_PRECISION_BF16), through oneDNN's matmul primitive: operands
 * rounded to bfloat16, products accumulated and returned in FP32.
 *
 * Dispatch. oneDNN picks its kernels at run time from the CPU and the
 * kernel's permission for AMX tiles (it asks for XFEATURE_XTILEDATA
 * itself); DNNL_MAX_CPU_ISA caps them (AVX512_CORE_BF16 forces the
 * AVX512-BF16 kernels on an AMX machine). fedrun takes oneDNN's effective
 * ISA: AMX-BF16, else AVX512-BF16, else a bf16 context is refused with a
 * message naming the missing CPU feature. oneDNN would run bf16 on lesser
 * CPUs by converting to FP32, slower than FP32 itself; fedrun never does.
 *
 * Reproducibility. A primitive is made with one OpenMP thread, so that
 * oneDNN's blocking (which takes the thread count into account, and may
 * split the reduction over threads) is that of one thread, and executed
 * on the calling thread; large products are cut into blocks of rows or
 * columns of C exactly as gemm.c cuts its sgemms (fixed by the shape), one
 * primitive execution each, spread over the context's threads. So a bf16
 * product has the same bits for every thread count. The bits do depend on
 * the kernel (AMX and AVX512-BF16 sum in other orders) and may depend on
 * the CPU model's cache sizes, from which oneDNN blocks K.
 *
 * Operands. A (and B when it is not a parameter) are converted to bf16 per
 * product, in their stored layout, into buffers of the context (VCVTNEPS2BF16:
 * round to nearest even, subnormals to zero). A B inside the range given
 * to declare_params is reordered once, FP32 straight into the blocked bf16
 * layout the primitive asks for, and kept until the range is written
 * through the context (nn_bf16_written) or declared again: once per
 * optimizer step, whatever the number of products that read it. */
#include "config.h"
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fedrun/error.h"
#include "cpu.h"

#ifdef HAVE_DNNL
#include <cblas.h>
#include <immintrin.h>
#include <oneapi/dnnl/dnnl.h>

/* ---- the process's oneDNN engine and kernel family ---- */

static pthread_once_t bf16_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t bf16_engine;
static const char *bf16_isa; /* "amx_bf16", "avx512_bf16" or NULL */
static char bf16_why[512];   /* why bf16_isa is NULL */

static const char *isa_text(dnnl_cpu_isa_t isa)
{
	switch (isa) {
	case dnnl_cpu_isa_sse41:
		return "sse4.1";
	case dnnl_cpu_isa_avx:
		return "avx";
	case dnnl_cpu_isa_avx2:
		return "avx2";
	case dnnl_cpu_isa_avx2_vnni:
		return "avx2_vnni";
	case dnnl_cpu_isa_avx512_mic:
	case dnnl_cpu_isa_avx512_mic_4ops:
		return "avx512_mic";
	case dnnl_cpu_isa_avx512_core:
		return "avx512_core";
	case dnnl_cpu_isa_avx512_core_vnni:
		return "avx512_core_vnni";
	default:
		return "an older ISA";
	}
}

/* The implementation oneDNN picks for a bf16 product 64 x 64 x 64:
 * brg:avx512_core_amx_bf16 where AMX tiles may be used (the CPU has them
 * and the kernel grants them), brg:avx512_core_bf16 with AVX512-BF16 only. */
static const char *probe_impl(void)
{
	dnnl_memory_desc_t a, b, c;
	dnnl_dims_t d = {64, 64};
	dnnl_matmul_desc_t md;
	dnnl_primitive_desc_t pd = NULL;
	const char *impl = NULL;
	if (dnnl_memory_desc_init_by_tag(&a, 2, d, dnnl_bf16, dnnl_ab) == dnnl_success &&
	    dnnl_memory_desc_init_by_tag(&b, 2, d, dnnl_bf16, dnnl_ab) == dnnl_success &&
	    dnnl_memory_desc_init_by_tag(&c, 2, d, dnnl_f32, dnnl_ab) == dnnl_success &&
	    dnnl_matmul_desc_init(&md, &a, &b, NULL, &c) == dnnl_success &&
	    dnnl_primitive_desc_create(&pd, &md, NULL, bf16_engine, NULL) == dnnl_success)
		dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
	static char keep[64];
	snprintf(keep, sizeof keep, "%s", impl ? impl : "");
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	return keep;
}

static void bf16_init(void)
{
	const char *cap = getenv("DNNL_MAX_CPU_ISA");
	if (dnnl_engine_create(&bf16_engine, dnnl_cpu, 0) != dnnl_success) {
		bf16_engine = NULL;
		snprintf(bf16_why, sizeof bf16_why, "oneDNN could not create its CPU engine");
		return;
	}
	const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
	const char *impl = probe_impl();
	if ((isa & dnnl_cpu_isa_avx512_core_bf16) != dnnl_cpu_isa_avx512_core_bf16) {
		if (cap && *cap)
			snprintf(bf16_why, sizeof bf16_why,
				 "DNNL_MAX_CPU_ISA=%.64s caps oneDNN at %s, which has neither "
				 "amx_bf16 nor avx512_bf16; they need one of them",
				 cap, isa_text(isa));
		else
			snprintf(bf16_why, sizeof bf16_why,
				 "this CPU has neither amx_bf16 nor avx512_bf16 (oneDNN's best "
				 "kernels here are %s); they need one of them",
				 isa_text(isa));
	} else if (strcmp(impl, "brg:avx512_core_amx_bf16") == 0) {
		bf16_isa = "amx_bf16";
	} else if (strcmp(impl, "brg:avx512_core_bf16") == 0) {
		bf16_isa = "avx512_bf16";
	} else {
		snprintf(bf16_why, sizeof bf16_why,
			 "oneDNN offers no bf16 matrix-product kernel here (it picked \"%s\")",
			 impl);
	}
}

const char *fedrun_backend_cpu_bf16_isa(void)
{
	pthread_once(&bf16_once, bf16_init);
	if (!bf16_isa) {
		fedrun_error(FEDRUN_EUNSUPPORTED, "bf16 products: %s", bf16_why);
		return NULL;
	}
	return bf16_isa;
}

/* ---- per context: primitives, parameter copies, buffers ---- */

#define PRIM_SLOTS 256 /* primitives kept per context (a direct-mapped cache) */

struct prim_key {
	int m, n, k, lda, ldb, ldc; /* ldb 0: B in the primitive's own layout */
	int ta, tb;
	float alpha, beta;
};

struct prim {
	struct prim_key key;
	dnnl_primitive_t p;
	dnnl_memory_desc_t a, b, c, sp; /* b: the layout B must have */
	size_t sp_bytes;
};

/* A parameter matrix (rows of B's storage from ptr) in a primitive's layout. */
struct wcopy {
	const float *ptr;
	int k, n, ld, tb;
	dnnl_memory_desc_t md, src; /* the copy's layout, and ptr's */
	dnnl_primitive_t reorder;   /* src to md */
	dnnl_memory_desc_t sp;	    /* its scratchpad */
	size_t sp_bytes;
	bool valid;		    /* false: written since; reorder again */
	void *data;
};

struct thread_buf {
	dnnl_stream_t stream;
	void *scratch;
	size_t scratch_bytes;
	float *cbuf; /* a block of C, dense, when C's rows are apart */
	size_t ccap;
};

struct nn_bf16 {
	struct prim prims[PRIM_SLOTS];
	struct wcopy *w;
	size_t nw, capw;
	const float *pp; /* the declared parameters */
	uint64_t pn;
	uint16_t *abuf, *bbuf; /* converted A and B of one product */
	size_t acap, bcap; /* bytes */
	float *ra, *rb;	   /* A and B rounded to bf16, as floats (small products) */
	size_t racap, rbcap;
	struct thread_buf *tb;
	int ntb;
};

static int dnnl_fail(dnnl_status_t s, const char *what)
{
	return fedrun_error(s == dnnl_out_of_memory ? FEDRUN_ENOMEM : FEDRUN_EIO,
			    "bf16 product: oneDNN %s failed (status %d)", what, (int)s);
}

int nn_bf16_create(struct nn_cpu_ctx *c)
{
	if (!fedrun_backend_cpu_bf16_isa())
		return fedrun_error_wrap(FEDRUN_EUNSUPPORTED, "cpu backend: ");
	c->bf16 = calloc(1, sizeof *c->bf16);
	if (!c->bf16)
		return fedrun_error(FEDRUN_ENOMEM, "cpu backend: bf16 context");
	return 0;
}

static void wcopies_free(struct nn_bf16 *s)
{
	for (size_t i = 0; i < s->nw; i++) {
		free(s->w[i].data);
		dnnl_primitive_destroy(s->w[i].reorder);
	}
	s->nw = 0;
}

void nn_bf16_destroy(struct nn_cpu_ctx *c)
{
	struct nn_bf16 *s = c->bf16;
	if (!s)
		return;
	for (int i = 0; i < PRIM_SLOTS; i++)
		if (s->prims[i].p)
			dnnl_primitive_destroy(s->prims[i].p);
	wcopies_free(s);
	free(s->w);
	free(s->abuf);
	free(s->bbuf);
	free(s->ra);
	free(s->rb);
	for (int i = 0; i < s->ntb; i++) {
		if (s->tb[i].stream)
			dnnl_stream_destroy(s->tb[i].stream);
		free(s->tb[i].scratch);
		free(s->tb[i].cbuf);
	}
	free(s->tb);
	free(s);
	c->bf16 = NULL;
}

void nn_bf16_declare(struct nn_cpu_ctx *c, const float *p, uint64_t n)
{
	struct nn_bf16 *s = c->bf16;
	if (!s)
		return;
	wcopies_free(s);
	s->pp = n ? p : NULL;
	s->pn = p ? n : 0;
}

void nn_bf16_written(struct nn_cpu_ctx *c, const void *dst, uint64_t bytes)
{
	struct nn_bf16 *s = c ? c->bf16 : NULL;
	if (!s || !s->nw || !bytes || !s->pn)
		return;
	const char *d = dst, *p = (const char *)s->pp;
	if (d < p + s->pn * sizeof(float) && p < d + bytes) /* kept for the next reorder */
		for (size_t i = 0; i < s->nw; i++)
			s->w[i].valid = false;
}

/* ---- conversion ---- */

__attribute__((target("avx512f,avx512bf16,avx512vl"))) static void
to_bf16_row(const float *x, uint64_t n, uint16_t *y)
{
	uint64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256bh v = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + i));
		_mm256_storeu_si256((__m256i *)(y + i), (__m256i)v);
	}
	if (i < n) {
		__mmask16 k = (__mmask16)((1u << (n - i)) - 1);
		__m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(k, x + i));
		_mm256_mask_storeu_epi16(y + i, k, (__m256i)v);
	}
}

/* y = x rounded to bf16 (as to_bf16_row), as floats */
__attribute__((target("avx512f,avx512bf16,avx512vl"))) static void
round_bf16_row(const float *x, uint64_t n, float *y)
{
	uint64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256bh v = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + i));
		__m512i w = _mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)v), 16);
		_mm512_storeu_ps(y + i, _mm512_castsi512_ps(w));
	}
	if (i < n) {
		__mmask16 k = (__mmask16)((1u << (n - i)) - 1);
		__m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(k, x + i));
		__m512i w = _mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)v), 16);
		_mm512_mask_storeu_ps(y + i, k, _mm512_castsi512_ps(w));
	}
}

/* *buf of at least `bytes` bytes (64-byte aligned; contents not kept) */
static int grow(void **buf, size_t *cap, uint64_t bytes)
{
	if (bytes <= *cap)
		return 0;
	free(*buf);
	*buf = aligned_alloc(64, (bytes + 63) / 64 * 64);
	*cap = *buf ? bytes : 0;
	if (!*buf)
		return fedrun_error(FEDRUN_ENOMEM, "bf16 product: %llu-byte operand buffer",
				    (unsigned long long)bytes);
	return 0;
}

/* Products of fewer multiply-adds than this are FP32 products (one CBLAS
 * call) of the operands rounded to bf16: the same arithmetic, since a
 * product of two bf16 values is exact in FP32 and the sums are FP32 in
 * both, without oneDNN's few microseconds a call, which exceed such a
 * product's work (attention's per-head products: 20 x 20 x 64 took
 * 2.8 us through oneDNN and 0.6 us so on an AMX Xeon; the two break even
 * near 64^3). */
#define BF16_SMALL ((uint64_t)1 << 18)

static int small_gemm(struct nn_bf16 *s, bool ta, bool tb, int m, int n, int k, float alpha,
		      const float *a, int lda, const float *b, int ldb, float beta, float *c,
		      int ldc)
{
	const int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
	int rc = grow((void **)&s->ra, &s->racap, (uint64_t)ar * ac * sizeof(float));
	if (rc == 0)
		rc = grow((void **)&s->rb, &s->rbcap, (uint64_t)br * bc * sizeof(float));
	if (rc)
		return rc;
	for (int i = 0; i < ar; i++)
		round_bf16_row(a + (ptrdiff_t)i * lda, (uint64_t)ac, s->ra + (ptrdiff_t)i * ac);
	for (int i = 0; i < br; i++)
		round_bf16_row(b + (ptrdiff_t)i * ldb, (uint64_t)bc, s->rb + (ptrdiff_t)i * bc);
	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
		    m, n, k, alpha, s->ra, ac, s->rb, bc, beta, c, ldc);
	return 0;
}

/* y (rows, cols), contiguous = bf16 of x (rows, cols) with row stride ld */
static void to_bf16(int nt, uint64_t rows, uint64_t cols, const float *x, uint64_t ld,
		    uint16_t *y)
{
	(void)nt;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && rows * cols >= 65536)
	for (uint64_t r = 0; r < rows; r++)
		to_bf16_row(x + r * ld, cols, y + r * cols);
}

/* ---- primitives ---- */

static dnnl_status_t md2(dnnl_memory_desc_t *md, int64_t r, int64_t c, dnnl_data_type_t t,
			 bool trans, int64_t ld)
{
	dnnl_dims_t dims = {r, c};
	dnnl_dims_t st = {trans ? 1 : ld, trans ? ld : 1};
	return dnnl_memory_desc_init_by_strides(md, 2, dims, t, st);
}

static uint32_t prim_hash(const struct prim_key *k)
{
	uint32_t h = 2166136261u;
	const unsigned char *p = (const unsigned char *)k;
	for (size_t i = 0; i < sizeof *k; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static int prim_make_1t(const struct prim_key *k, struct prim *out)
{
	dnnl_memory_desc_t a, b, c;
	dnnl_status_t s = md2(&a, k->m, k->k, dnnl_bf16, k->ta, k->lda);
	if (s == dnnl_success) {
		if (k->ldb) {
			s = md2(&b, k->k, k->n, dnnl_bf16, k->tb, k->ldb);
		} else {
			dnnl_dims_t dims = {k->k, k->n};
			s = dnnl_memory_desc_init_by_tag(&b, 2, dims, dnnl_bf16,
							 dnnl_format_tag_any);
		}
	}
	if (s == dnnl_success)
		s = md2(&c, k->m, k->n, dnnl_f32, false, k->ldc);
	if (s != dnnl_success)
		return dnnl_fail(s, "memory descriptor");
	dnnl_matmul_desc_t d;
	if ((s = dnnl_matmul_desc_init(&d, &a, &b, NULL, &c)) != dnnl_success)
		return dnnl_fail(s, "matmul descriptor");
	dnnl_primitive_attr_t attr;
	if ((s = dnnl_primitive_attr_create(&attr)) != dnnl_success)
		return dnnl_fail(s, "attribute");
	dnnl_post_ops_t po = NULL;
	s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
	if (s == dnnl_success && k->alpha != 1.0f)
		s = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &k->alpha);
	if (s == dnnl_success && k->beta != 0.0f) {
		s = dnnl_post_ops_create(&po);
		if (s == dnnl_success)
			s = dnnl_post_ops_append_sum(po, k->beta);
		if (s == dnnl_success)
			s = dnnl_primitive_attr_set_post_ops(attr, po);
	}
	dnnl_primitive_desc_t pd = NULL;
	if (s == dnnl_success)
		s = dnnl_primitive_desc_create(&pd, &d, attr, bf16_engine, NULL);
	if (po)
		dnnl_post_ops_destroy(po);
	dnnl_primitive_attr_destroy(attr);
	if (s != dnnl_success)
		return dnnl_fail(s, "matmul primitive descriptor");
	const char *impl = NULL;
	dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
	if (!impl || strncmp(impl, "brg:", 4) != 0) {
		/* not one of the bf16 kernels of bf16_init's ISA */
		int rc = fedrun_error(FEDRUN_EUNSUPPORTED,
				      "bf16 product %dx%dx%d: oneDNN offers only \"%s\", no bf16 "
				      "kernel",
				      k->m, k->n, k->k, impl ? impl : "?");
		dnnl_primitive_desc_destroy(pd);
		return rc;
	}
	out->key = *k;
	out->a = a;
	out->b = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	out->c = c;
	out->sp = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	out->sp_bytes = dnnl_memory_desc_get_size(&out->sp);
	s = dnnl_primitive_create(&out->p, pd);
	dnnl_primitive_desc_destroy(pd);
	if (s != dnnl_success) {
		out->p = NULL;
		return dnnl_fail(s, "matmul primitive");
	}
	return 0;
}

/* Made with one OpenMP thread (see the top of the file): the descriptor
 * and the primitive both, as oneDNN reads the thread count in each (a
 * primitive made with two threads from a descriptor made with one threw
 * std::bad_array_new_length in brgemm_kernel_create). */
static int prim_make(const struct prim_key *k, struct prim *out)
{
#ifdef _OPENMP
	const int saved = omp_get_max_threads();
	omp_set_num_threads(1);
#endif
	int rc = prim_make_1t(k, out);
#ifdef _OPENMP
	omp_set_num_threads(saved);
#endif
	return rc;
}

/* Two slots per key (h, h + 1); a miss replaces one that is not `keep`,
 * the primitive another block of the same product holds. */
static int prim_get(struct nn_bf16 *s, const struct prim_key *k, const struct prim *keep,
		    struct prim **out)
{
	const uint32_t h = prim_hash(k) % PRIM_SLOTS;
	struct prim *e[2] = {&s->prims[h], &s->prims[(h + 1) % PRIM_SLOTS]};
	for (int i = 0; i < 2; i++)
		if (e[i]->p && memcmp(&e[i]->key, k, sizeof *k) == 0) {
			*out = e[i];
			return 0;
		}
	struct prim *v = e[0] == keep ? e[1] : e[0];
	if (!e[1]->p && e[1] != keep)
		v = e[1];
	if (!e[0]->p && e[0] != keep)
		v = e[0];
	struct prim fresh;
	memset(&fresh, 0, sizeof fresh);
	int rc = prim_make(k, &fresh);
	if (rc)
		return rc;
	if (v->p)
		dnnl_primitive_destroy(v->p);
	*v = fresh;
	*out = v;
	return 0;
}

static int exec(dnnl_primitive_t p, dnnl_stream_t st, int n, const dnnl_memory_desc_t *const *md,
		const int *arg, void *const *data)
{
	dnnl_memory_t mem[4] = {NULL};
	dnnl_exec_arg_t args[4] = {{0, NULL}};
	dnnl_status_t s = dnnl_success;
	for (int i = 0; i < n && s == dnnl_success; i++) {
		s = dnnl_memory_create(&mem[i], md[i], bf16_engine, data[i]);
		args[i].arg = arg[i];
		args[i].memory = mem[i];
	}
	if (s == dnnl_success)
		s = dnnl_primitive_execute(p, st, n, args);
	if (s == dnnl_success)
		s = dnnl_stream_wait(st);
	for (int i = 0; i < n; i++)
		if (mem[i])
			dnnl_memory_destroy(mem[i]);
	return s == dnnl_success ? 0 : dnnl_fail(s, "matmul execution");
}

static int threads_ready(struct nn_bf16 *s, int nt, size_t sp_bytes, size_t c_floats);

/* The copy of parameter block B (stored from ptr, row stride ld) in the
 * layout of primitive p, made at its first use since the last write. */
/* The copy of parameter block B (stored from ptr, row stride ld) in the
 * layout of primitive p, made at its first use since the last write (its
 * buffer and reorder primitive are kept from step to step). */
static int wcopy_get(struct nn_bf16 *s, const struct prim *p, const float *ptr, int ld, void **out)
{
	const struct prim_key *k = &p->key;
	struct wcopy *w = NULL;
	for (size_t i = 0; i < s->nw && !w; i++) {
		struct wcopy *e = &s->w[i];
		if (e->ptr == ptr && e->k == k->k && e->n == k->n && e->ld == ld &&
		    e->tb == k->tb && dnnl_memory_desc_equal(&e->md, &p->b))
			w = e;
	}
	if (w && w->valid) {
		*out = w->data;
		return 0;
	}
	if (!w) {
		if (s->nw == s->capw) {
			size_t cap = s->capw ? 2 * s->capw : 16;
			struct wcopy *g = realloc(s->w, cap * sizeof *g);
			if (!g)
				return fedrun_error(FEDRUN_ENOMEM, "bf16 product: parameter copies");
			s->w = g;
			s->capw = cap;
		}
		struct wcopy e = {.ptr = ptr, .k = k->k, .n = k->n, .ld = ld, .tb = k->tb,
				  .md = p->b};
		size_t bytes = dnnl_memory_desc_get_size(&p->b);
		dnnl_primitive_desc_t rpd = NULL;
		/* A scratchpad of our own, as for the products: oneDNN's
		 * primitive cache hands two workers whose models have the same
		 * shapes one reorder primitive, whose library-managed
		 * scratchpad they would share while running it at once (heap
		 * corruption seen with two workers fine-tuning in bf16). */
		dnnl_primitive_attr_t attr = NULL;
		dnnl_status_t st = md2(&e.src, k->k, k->n, dnnl_f32, k->tb, ld);
		if (st == dnnl_success)
			st = dnnl_primitive_attr_create(&attr);
		if (st == dnnl_success)
			st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
		if (st == dnnl_success) {
#ifdef _OPENMP
			int saved = omp_get_max_threads();
			omp_set_num_threads(1);
#endif
			st = dnnl_reorder_primitive_desc_create(&rpd, &e.src, bf16_engine, &e.md,
								bf16_engine, attr);
			if (st == dnnl_success) {
				e.sp = *dnnl_primitive_desc_query_md(rpd, dnnl_query_scratchpad_md,
								     0);
				e.sp_bytes = dnnl_memory_desc_get_size(&e.sp);
				st = dnnl_primitive_create(&e.reorder, rpd);
			}
#ifdef _OPENMP
			omp_set_num_threads(saved);
#endif
		}
		if (attr)
			dnnl_primitive_attr_destroy(attr);
		if (rpd)
			dnnl_primitive_desc_destroy(rpd);
		if (st != dnnl_success)
			return dnnl_fail(st, "reorder of a parameter");
		if (!(e.data = aligned_alloc(64, (bytes + 63) / 64 * 64))) {
			dnnl_primitive_destroy(e.reorder);
			return fedrun_error(FEDRUN_ENOMEM, "bf16 product: %zu-byte parameter copy",
					    bytes);
		}
		w = &s->w[s->nw++];
		*w = e;
	}
	int rc = threads_ready(s, 1, w->sp_bytes, 0);
	if (rc)
		return rc;
	const dnnl_memory_desc_t *md[3] = {&w->src, &w->md, &w->sp};
	const int arg[3] = {DNNL_ARG_FROM, DNNL_ARG_TO, DNNL_ARG_SCRATCHPAD};
	void *dp[3] = {(void *)ptr, w->data, s->tb[0].scratch};
	rc = exec(w->reorder, s->tb[0].stream, w->sp_bytes ? 3 : 2, md, arg, dp);
	if (rc)
		return rc;
	w->valid = true;
	*out = w->data;
	return 0;
}

static int threads_ready(struct nn_bf16 *s, int nt, size_t sp_bytes, size_t c_floats)
{
	if (nt > s->ntb) {
		struct thread_buf *t = realloc(s->tb, (size_t)nt * sizeof *t);
		if (!t)
			return fedrun_error(FEDRUN_ENOMEM, "bf16 product: thread buffers");
		memset(t + s->ntb, 0, (size_t)(nt - s->ntb) * sizeof *t);
		s->tb = t;
		s->ntb = nt;
	}
	for (int i = 0; i < nt; i++) {
		struct thread_buf *t = &s->tb[i];
		if (!t->stream) {
			dnnl_status_t st =
			    dnnl_stream_create(&t->stream, bf16_engine, dnnl_stream_default_flags);
			if (st != dnnl_success) {
				t->stream = NULL;
				return dnnl_fail(st, "stream");
			}
		}
		if (t->scratch_bytes < sp_bytes) {
			free(t->scratch);
			t->scratch = aligned_alloc(64, (sp_bytes + 63) / 64 * 64);
			t->scratch_bytes = t->scratch ? sp_bytes : 0;
			if (!t->scratch)
				return fedrun_error(FEDRUN_ENOMEM,
						    "bf16 product: %zu-byte scratchpad", sp_bytes);
		}
		if (t->ccap < c_floats) {
			free(t->cbuf);
			t->cbuf = aligned_alloc(64, (c_floats * sizeof(float) + 63) / 64 * 64);
			t->ccap = t->cbuf ? c_floats : 0;
			if (!t->cbuf)
				return fedrun_error(FEDRUN_ENOMEM,
						    "bf16 product: %zu-float block of C", c_floats);
		}
	}
	return 0;
}


struct block {
	const float *asrc, *bsrc; /* to convert inside the block, or NULL */
	uint16_t *a, *bcv;	  /* op(A)'s rows and op(B)'s columns, bf16 */
	const void *b;		  /* B as the primitive reads it */
	float *c;		  /* where the block of C is, row stride ldc */
	struct prim *p;
	int m, n;	    /* its shape */
	int ar, ac, br, bc; /* the stored shapes of asrc and bsrc */
};

/* c (m,n), row stride ldc, = t (m,n), dense, + beta c (beta 0: ignoring c) */
static void c_back(int m, int n, const float *t, float beta, float *c, int ldc)
{
	for (int i = 0; i < m; i++) {
		const float *ti = t + (ptrdiff_t)i * n;
		float *ci = c + (ptrdiff_t)i * ldc;
		if (beta == 0.0f)
			memcpy(ci, ti, (size_t)n * sizeof *ci);
		else
			for (int j = 0; j < n; j++)
				ci[j] = ti[j] + beta * ci[j];
	}
}

/* C (m,n) = alpha op(A) op(B) + beta C with bf16 operands. The blocks of C
 * are those of gemm.c's nn_cpu_gemm_mt (one when !spread). oneDNN 2.6's
 * AMX and AVX512-BF16 kernels (brgemm) read dense operands and write a
 * dense C, so each block gets its own dense bf16 copy of the operand that
 * is cut (converted inside the block, in parallel), the other operand is
 * converted whole beforehand (or is a kept parameter copy), and a block
 * whose rows of C are apart (ldc > its width) is made in a dense buffer
 * of its thread and added to C there (beta applied then, alpha by the
 * primitive). */
int nn_bf16_gemm(const void *ctxp, bool spread, bool ta, bool tb, int m, int n, int k, float alpha,
		 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
	struct nn_cpu_ctx *ctx = (struct nn_cpu_ctx *)ctxp;
	struct nn_bf16 *s = ctx->bf16;
	if (m == 0 || n == 0)
		return 0;
	if (k == 0) { /* C = beta C, as BLAS */
		for (int i = 0; i < m; i++)
			for (int j = 0; j < n; j++)
				c[(ptrdiff_t)i * ldc + j] =
				    beta == 0.0f ? 0.0f : beta * c[(ptrdiff_t)i * ldc + j];
		return 0;
	}
	if ((uint64_t)m * (uint64_t)n * (uint64_t)k < BF16_SMALL)
		return small_gemm(s, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
	const int nt = spread ? nn_cpu_threads(ctx) : 1;
	const bool rows = m >= n;
	const int len = rows ? m : n;
	const int nb = spread ? nn_gemm_blocks(m, n, k) : 1, bl = nb > 1 ? NN_GEMM_BLOCK : len;
	const bool acut = nb > 1 && rows, bcut = nb > 1 && !rows;
	/* A stored (m,k), or (k,m) when transposed; B (k,n) or (n,k) */
	const int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
	const float *bend = b + (ptrdiff_t)(br - 1) * ldb + bc;
	const bool param = s->pn && b >= s->pp && bend <= s->pp + s->pn;
	int rc = grow((void **)&s->abuf, &s->acap, (uint64_t)ar * ac * 2);
	if (rc == 0 && !param)
		rc = grow((void **)&s->bbuf, &s->bcap, (uint64_t)br * bc * 2);
	if (rc)
		return rc;
	if (!acut)
		to_bf16(nt, (uint64_t)ar, (uint64_t)ac, a, (uint64_t)lda, s->abuf);
	if (!param && !bcut)
		to_bf16(nt, (uint64_t)br, (uint64_t)bc, b, (uint64_t)ldb, s->bbuf);
	struct block one = {0}, *blk = nb == 1 ? &one : calloc((size_t)nb, sizeof *blk);
	if (!blk)
		return fedrun_error(FEDRUN_ENOMEM, "bf16 product: %d blocks", nb);
	size_t sp = 0, cfl = 0;
	for (int i = 0; i < nb && rc == 0; i++) {
		struct block *q = &blk[i];
		const int o = i * bl, w = len - o < bl ? len - o : bl;
		q->m = rows ? w : m;
		q->n = rows ? n : w;
		const bool dense = ldc == q->n;
		/* op(A)'s rows o..o+w: A's rows, or its columns (transposed) */
		q->a = s->abuf + (acut ? (ptrdiff_t)o * k : 0);
		if (acut) {
			q->asrc = ta ? a + o : a + (ptrdiff_t)o * lda;
			q->ar = ta ? k : w;
			q->ac = ta ? w : k;
		}
		/* op(B)'s columns o..o+w: B's columns, or its rows (transposed) */
		if (!param) {
			q->bcv = s->bbuf + (bcut ? (ptrdiff_t)o * k : 0);
			if (bcut) {
				q->bsrc = tb ? b + (ptrdiff_t)o * ldb : b + o;
				q->br = tb ? w : k;
				q->bc = tb ? k : w;
			}
			q->b = q->bcv;
		}
		struct prim_key key = {.m = q->m,
				       .n = q->n,
				       .k = k,
				       .lda = acut ? (ta ? w : k) : ac,
				       .ldb = param ? 0 : (bcut ? (tb ? k : w) : bc),
				       .ldc = q->n,
				       .ta = ta,
				       .tb = tb,
				       .alpha = alpha,
				       .beta = dense ? beta : 0.0f};
		if ((rc = prim_get(s, &key, i ? blk[0].p : NULL, &q->p)))
			break;
		if (q->p->sp_bytes > sp)
			sp = q->p->sp_bytes;
		if (!dense && (size_t)q->m * (size_t)q->n > cfl)
			cfl = (size_t)q->m * (size_t)q->n;
		q->c = c + (rows ? (ptrdiff_t)o * ldc : o);
		if (param) {
			void *data = NULL;
			const float *bp = bcut ? (tb ? b + (ptrdiff_t)o * ldb : b + o) : b;
			if ((rc = wcopy_get(s, q->p, bp, ldb, &data)))
				break;
			q->b = data;
		}
	}
	if (rc == 0)
		rc = threads_ready(s, nt, sp, cfl);
	if (rc == 0) {
		int bad = 0;
#ifdef _OPENMP
		/* on one thread (oneDNN's gemm would take the OpenMP default) */
		const int saved = omp_get_max_threads();
		if (nt == 1)
			omp_set_num_threads(1);
#endif
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1) reduction(| : bad)
		for (int i = 0; i < nb; i++) {
#ifdef _OPENMP
			struct thread_buf *t = &s->tb[omp_get_thread_num()];
#else
			struct thread_buf *t = &s->tb[0];
#endif
			const struct block *q = &blk[i];
			const struct prim *p = q->p;
			if (q->asrc)
				to_bf16(1, (uint64_t)q->ar, (uint64_t)q->ac, q->asrc,
					(uint64_t)lda, q->a);
			if (q->bsrc)
				to_bf16(1, (uint64_t)q->br, (uint64_t)q->bc, q->bsrc,
					(uint64_t)ldb, q->bcv);
			const bool dense = ldc == q->n;
			const dnnl_memory_desc_t *md[4] = {&p->a, &p->b, &p->c, &p->sp};
			const int arg[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
					    DNNL_ARG_SCRATCHPAD};
			void *data[4] = {(void *)q->a, (void *)q->b, dense ? q->c : t->cbuf,
					 t->scratch};
			if (exec(p->p, t->stream, p->sp_bytes ? 4 : 3, md, arg, data))
				bad = 1;
			else if (!dense)
				c_back(q->m, q->n, t->cbuf, beta, q->c, ldc);
		}
#ifdef _OPENMP
		omp_set_num_threads(saved);
#endif
		if (bad)
			rc = fedrun_error(
			    FEDRUN_EIO, "bf16 product %dx%dx%d: oneDNN execution failed", m, n, k);
	}
	if (blk != &one)
		free(blk);
	return rc;
}

#else /* !HAVE_DNNL */

const char *fedrun_backend_cpu_bf16_isa(void)
{
	fedrun_error(FEDRUN_EUNSUPPORTED,
		     "bf16 products: libfedrun was built without oneDNN (install libdnnl-dev and "
		     "configure --with-dnnl)");
	return NULL;
}

int nn_bf16_create(struct nn_cpu_ctx *c)
{
	(void)c;
	fedrun_backend_cpu_bf16_isa();
	return fedrun_error_wrap(FEDRUN_EUNSUPPORTED, "cpu backend: ");
}

void nn_bf16_destroy(struct nn_cpu_ctx *c)
{
	(void)c;
}

void nn_bf16_declare(struct nn_cpu_ctx *c, const float *p, uint64_t n)
{
	(void)c, (void)p, (void)n;
}

void nn_bf16_written(struct nn_cpu_ctx *c, const void *dst, uint64_t bytes)
{
	(void)c, (void)dst, (void)bytes;
}

int nn_bf16_gemm(const void *ctx, bool spread, bool ta, bool tb, int m, int n, int k, float alpha,
		 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
	(void)ctx, (void)spread, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha;
	(void)a, (void)lda, (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
	return fedrun_error(FEDRUN_EUNSUPPORTED, "bf16 product: built without oneDNN");
}

#endif
