/* SPDX-License-Identifier: Apache-2.0 */
/* The neural-network backend: an append-only table of layer-level ops that
 * models are written against, so that a model does not know which device it
 * runs on (ggml-backend style). The CPU backend is built into libfedrun;
 * others (CUDA) are plugins of kind FEDRUN_KIND_BACKEND whose ops member
 * points at a struct fedrun_backend_ops.
 *
 * Rules
 *
 *  - The table's first member is its size, sizeof(struct fedrun_backend_ops)
 *    as the backend was built. Members are only ever added at the end; a
 *    caller MUST check `size` (FEDRUN_BACKEND_HAS) before using a member
 *    added after act_backward, the last one of ABI 1.0. A backend MUST set
 *    every member of ABI 1.0; it returns FEDRUN_EUNSUPPORTED from an op it
 *    cannot do for given arguments.
 *  - Every op takes the execution context made by ctx_create first. A
 *    context is used by one thread at a time; make one per worker thread.
 *    (The CPU backend also accepts ctx == NULL, meaning default settings.)
 *  - Every op returns 0 or a negative FEDRUN_E* code with a message recorded
 *    by fedrun_error(); they never exit, abort or print.
 *  - "Device memory" is memory from alloc(). On the CPU backend it is plain
 *    host memory, and any host pointer (a parameter arena, a stack array)
 *    may be passed where device memory is asked for. Index arrays (ids,
 *    targets) and dropout masks are device memory too; scalars returned
 *    through pointers (loss, count) and struct fedrun_rng are host memory.
 *  - Every pointer is borrowed for the duration of the call. Outputs never
 *    alias inputs unless an op says so.
 *  - Gradient convention (llm.c style): gradients of PARAMETERS (dw, db)
 *    are ACCUMULATED (+=) into the caller's buffers, so that tied weights and
 *    several micro-batches add up; the caller zeroes them before a step.
 *    Gradients of ACTIVATIONS (dx, dh0, dlogits) are WRITTEN (=).
 *  - Matrices are row-major. A shape comment (T,B,H) lists dimensions from
 *    the slowest to the fastest varying; ld* are row strides in elements.
 *  - Threads (CPU backend): the kernels of a context use cfg.threads
 *    OpenMP threads (0: the OpenMP default of the calling thread, that is
 *    omp_get_max_threads()). Large matrix products (sgemm, linear, the
 *    GRU's products over all steps) are cut into blocks of rows or columns
 *    that depend on the shape alone, one CBLAS call a block, spread over
 *    those threads; each CBLAS call also uses the CBLAS library's own
 *    threads, a process-wide setting (fedrun_backend_cpu_set_blas_threads),
 *    which fedrun keeps at 1. A caller that runs several contexts at once
 *    on its own worker threads should give them T/workers threads between
 *    them (the engine sets each worker's OpenMP default so, and its models
 *    create contexts with threads = 0), or the threads oversubscribe the
 *    cores; the recurrence of a GRU has little parallel work per step, so
 *    one worker per core is its fast layout.
 *  - Reproducibility (CPU backend): results are the same bits for any
 *    cfg.threads, since every float is written by one thread and every sum
 *    runs in a fixed order (a matrix product's blocks do not depend on the
 *    thread count), and the same bits on any x86-64 whatever its vector
 *    units (no fused multiply-add in fedrun's own kernels). Matrix products
 *    are as reproducible as the CBLAS: OpenBLAS 0.3.21 gives the same bits
 *    for a fixed BLAS thread count but not across counts, which is why
 *    fedrun keeps that count at 1. A context of precision BF16 (below)
 *    keeps the promise across thread counts (its products are cut into
 *    the same blocks, each computed by oneDNN on one thread) but not
 *    across CPU models or kernels (AMX, AVX512-BF16).
 *
 * The ops (shapes of device arrays in parentheses)
 *
 *  ctx_create       a context (cfg may be NULL: defaults); ctx_destroy
 *                   frees it.
 *  alloc, free_mem  device memory, zero-filled and 64-byte aligned.
 *  zero, copy       memset and memcpy (device to device) of device memory.
 *  to_device, to_host
 *                   copies between host and device memory; to_host waits
 *                   for the work queued before it.
 *  sgemm            C (m,n) = alpha op(A) op(B) + beta C, op(X) = X or X^T
 *                   as in cblas_sgemm with CblasRowMajor: A is (m,k) or,
 *                   transposed, (k,m); B is (k,n) or (n,k); lda, ldb, ldc >=
 *                   the stored row length. beta == 0 ignores C's contents
 *                   (NaN included).
 *  sgemm_strided_batched
 *                   batch independent sgemms; problem i uses A + i stride_a,
 *                   B + i stride_b, C + i stride_c (strides in elements).
 *  linear_forward   y (N,out) = x (N,in) w^T + b, with w (out,in) as in
 *                   PyTorch's nn.Linear and b (out) or NULL.
 *  linear_backward  dx (N,in) = dy w (or dx NULL to skip);
 *                   dw (out,in) += dy^T x; db (out) += sum over rows of dy
 *                   (NULL to skip).
 *  embedding_forward
 *                   out (N,D) row i = w (V,D) row ids[i]; 0 <= ids[i] < V.
 *  embedding_backward
 *                   dw (V,D) row ids[i] += dout (N,D) row i, for every i: a
 *                   scatter-add, so repeated ids sum.
 *  gru_cache_floats floats of cache that gru_forward needs for dims d.
 *  gru_forward      One GRU layer over a sequence, PyTorch's equations and
 *                   gate order (r, z, n), for each step t:
 *                     r = sigmoid(W_ir x_t + b_ir + W_hr h + b_hr)
 *                     z = sigmoid(W_iz x_t + b_iz + W_hz h + b_hz)
 *                     n = tanh(W_in x_t + b_in + r * (W_hn h + b_hn))
 *                     h' = (1 - z) * n + z * h
 *                   x (T,B,I), h0 (B,H) or NULL for zeros, y (T,B,H) the
 *                   hidden state after each step (y[T-1] is the final
 *                   state); weights w_ih (3H,I) = [W_ir; W_iz; W_in], w_hh
 *                   (3H,H), b_ih (3H), b_hh (3H) (biases may be NULL). cache
 *                   (gru_cache_floats floats, device memory, its layout
 *                   private to the backend) receives what backward needs.
 *  gru_backward     Backpropagation through time. Takes x, h0, the weights
 *                   and y exactly as forward saw and wrote them, and the
 *                   cache, which it CONSUMES (overwrites): one backward per
 *                   forward. dy (T,B,H) is dL/dy (NULL: zero) and dhT (B,H)
 *                   an extra gradient on the final state y[T-1] (NULL:
 *                   zero). Writes dx (T,B,I) and dh0 (B,H) (each NULL to
 *                   skip) and accumulates into g's non-NULL members.
 *  dropout_forward  Inverted dropout: mask[i] = 1 with probability 1 - p,
 *                   y = x * mask / (1 - p); 0 <= p < 1. The mask is drawn
 *                   from the caller's stream `rng`, which the call advances
 *                   (see FEDRUN_DROPOUT_THRESHOLD), so it is a pure function
 *                   of
 *                   the stream whatever the thread count or device. y may
 *                   be x. mask (n) bytes.
 *  dropout_backward dx = dy * mask / (1 - p); dx may be dy.
 *  softmax_xent     Softmax cross-entropy over logits (N,V) with targets
 *                   (N); a negative target is ignored. *loss = mean over
 *                   the non-ignored rows of -log softmax(logits)[target]
 *                   (0 when none), *count = their number (either pointer
 *                   may be NULL). dlogits (N,V) = d(*loss)/d(logits), that
 *                   is (softmax - onehot) / count on counted rows and 0 on
 *                   ignored ones; NULL to skip (evaluation); it may be
 *                   logits itself, saving the memory of a second (N,V).
 *  act_forward      y = f(x) element-wise over n floats (enum fedrun_act);
 *                   y may be x.
 *  act_backward     dx = dy * f'(x), from the forward's input x; dx may
 *                   be dy.
 *
 * Added after ABI 1.0 (check with FEDRUN_BACKEND_HAS): the layers of an
 * encoder-decoder Transformer (Vaswani et al. 2017).
 *
 *  layernorm_forward
 *                   Layer normalization (Ba et al. 2016) over the last
 *                   dimension: for each row of x (N,D),
 *                     y = (x - mean) * rstd * gain + bias,
 *                     rstd = 1 / sqrt(var + eps),
 *                   var the biased variance (divided by D), as PyTorch's
 *                   nn.LayerNorm. gain (D) and bias (D) may be NULL (1 and
 *                   0). eps >= 0 (> 0 keeps a constant row finite: it
 *                   becomes bias). cache (2N floats) receives mean (N) then
 *                   rstd (N), a layout callers may read. y must not be x.
 *  layernorm_backward
 *                   From the forward's x, gain and cache: writes dx (N,D)
 *                   (NULL to skip; it may be dy) and accumulates
 *                   dgain (D) += sum over rows of dy * xhat and
 *                   dbias (D) += sum over rows of dy (each NULL to skip),
 *                   xhat = (x - mean) * rstd.
 *  attn_cache_floats
 *                   floats of cache that attn_forward needs for d:
 *                   B H Tq Tk, plus B H Tq Tk / 4 rounded up when
 *                   d->dropout > 0.
 *  attn_forward     The core of multi-head attention (Vaswani et al.,
 *                   sec. 3.2, eq. 1): for each sequence b and head h,
 *                     P = softmax(scale Q K^T + mask),  out = drop(P) V,
 *                   softmax over the keys. Layout: q (B,Tq,ldq), k
 *                   (B,Tk,ldk), v (B,Tk,ldv) and out (B,Tq,D), D = H dh,
 *                   row-major; head h of a row is its columns
 *                   [h dh, (h+1) dh). That is (B,T,H,dh), exactly what a
 *                   linear op with out = D (or a fused 3D or 2D projection,
 *                   with ld = 3D or 2D) writes, so no transpose is needed
 *                   to split or merge heads (see struct fedrun_attn_dims).
 *                   Masks: key j of sequence b is visible to query i when
 *                   j < key_len[b] (key_len (B) device memory, each in
 *                   [0, Tk]; NULL: all Tk keys) and, if d->causal, when
 *                   j <= i + Tk - Tq (the queries are the last Tq
 *                   positions: with Tq == Tk, j <= i). Hidden keys get a
 *                   probability of exactly 0; a query that sees no key gets
 *                   P = 0 and out = 0 (not NaN). Padding must therefore be
 *                   at the end of each sequence (right padding). Dropout
 *                   (p = d->dropout) on the probabilities is inverted and
 *                   draws its mask over the B H Tq Tk entries of P, in
 *                   order, from `rng` exactly as dropout_forward would
 *                   (FEDRUN_DROPOUT_THRESHOLD); with p = 0 the stream is
 *                   not used (rng may be NULL). cache (attn_cache_floats floats) receives P
 *                   (B,H,Tq,Tk), before dropout, in its first B H Tq Tk
 *                   floats (a layout callers may read, e.g. to show
 *                   alignments), then the dropout mask; the rest is
 *                   private.
 *  attn_backward    From the forward's q, k, v, key_len and cache (which
 *                   it does not modify) and dout (B,Tq,D): writes dq, dk,
 *                   dv with the strides of q, k, v (columns [0, D) of each
 *                   row only; each NULL to skip). dk and dv rows of hidden
 *                   keys (j >= key_len[b]) are written as 0.
 *  posenc_forward   Sinusoidal positional encoding (sec. 3.5 of Vaswani et
 *                   al.) added to scaled embeddings: for x, y (B,T,D),
 *                     y[b,t,:] = scale x[b,t,:] + PE(pos0 + t),
 *                     PE(p, 2i) = sin(p / 10000^(2i/D)),
 *                     PE(p, 2i+1) = cos(p / 10000^(2i/D)),
 *                   with scale usually sqrt(D) (sec. 3.4) and pos0 the
 *                   position of the first row (0; or the step of an
 *                   incremental decoder). x may be NULL (y = PE) and y may
 *                   be x.
 *  posenc_backward  dx (B,T,D) = scale dy, the gradient on the embedding
 *                   path (PE is constant); dx may be dy.
 *  label_smoothed_xent
 *                   Label-smoothed cross-entropy (Szegedy et al. 2016,
 *                   sec. 7) over logits (N,V), targets (N), a negative
 *                   target marking padding, which is ignored. With
 *                   p = softmax(logits row), the target distribution
 *                   q = (1 - eps) onehot(t) + eps / V, 0 <= eps <= 1:
 *                     row loss = -sum_j q_j log p_j
 *                              = (1 - eps) nll + eps mean_j(-log p_j),
 *                     nll = -log p_t,
 *                   as fairseq's label_smoothed_cross_entropy before
 *                   2021 (today's fairseq puts eps / (V-1) on each
 *                   non-target class: pass eps V / (V-1) for it). *loss =
 *                   sum of row losses / count and *nll = sum of row nll /
 *                   count (the plain NLL, for perplexity exp(*nll)), count
 *                   = the number of non-ignored rows (0 when none, with
 *                   both means 0); each pointer may be NULL. dlogits
 *                   (N,V) = d(*loss)/d(logits) = (p - q) / count on
 *                   counted rows, 0 on ignored ones; NULL to skip; it may
 *                   be logits itself.
 *
 * Added after the Transformer layers (check with FEDRUN_BACKEND_HAS):
 *
 *  softmax_xent_db  softmax_xent, with dlogits multiplied by scale (the
 *                   gradient of scale * *loss), and db (V) += the sum over
 *                   rows of that dlogits (NULL to skip; needs dlogits): the
 *                   bias gradient that linear_backward would accumulate
 *                   from dlogits, computed while each gradient row is
 *                   written instead of in another pass over (N,V). On the
 *                   CPU backend loss, dlogits and db have exactly the bits
 *                   of softmax_xent, scaling dlogits by scale, and
 *                   linear_backward's column sum.
 *
 * Added for training on the device (check with FEDRUN_BACKEND_HAS): the
 * local optimizer, so that parameters, gradients and optimizer state stay
 * in device memory across steps.
 *
 *  optim_step       fedrun_optim_step (fedrun/optim.h) over device memory:
 *                   params, grad (n) and state (fedrun_optim_state_floats
 *                   floats) are device memory, cfg and *step host memory
 *                   (*step is advanced). Global-norm clipping
 *                   (cfg->clip_norm) included. With zero_grad, grad is all
 *                   zeros afterwards (fedrun_optim_step_zero). On the CPU
 *                   backend it is those functions, bit for bit.
 *  prox_grad        grad (n) += mu (params - anchor), FedProx's proximal
 *                   gradient (fedrun_prox_grad); all three device memory.
 *
 * How a Transformer composes these ops (shapes (B,T,D), D = H dh):
 *  - Q, K, V and output projections are linear ops. Self-attention may use
 *    one fused projection: qkv (B T, 3D) = linear(x, W (3D,D)), then
 *    attn_forward with q = qkv, k = qkv + D, v = qkv + 2D, ldq = ldk =
 *    ldv = 3D; its attn_backward writes dq, dk, dv into one dqkv of the
 *    same layout, which linear_backward takes as dy. If the arena holds
 *    q_proj.weight, k_proj.weight, v_proj.weight (each (D,D)) one after
 *    the other, they are that W, and likewise three adjacent biases.
 *  - Encoder self-attention: Tq = Tk = source length, key_len = source
 *    lengths. Decoder self-attention: Tq = Tk = target length, causal,
 *    key_len = target lengths (or NULL: causality alone already hides the
 *    padding from every real query). Encoder-decoder attention: q from
 *    the decoder (Tq = target length), k and v from the encoder output
 *    (Tk = source length, e.g. one fused (B Ts, 2D) projection with
 *    ldk = ldv = 2D), key_len = source lengths, not causal.
 *  - out (B,Tq,D) is the concatenation of the heads, the input of the
 *    output projection.
 *  - The feed-forward block is linear, act (RELU), linear; residuals and
 *    the pre- or post-norm layer norms are the model's choice.
 */
#ifndef FEDRUN_BACKEND_H
#define FEDRUN_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "fedrun/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fedrun_optim_cfg; /* fedrun/plugin.h */

/* True when a table of `size` bytes has member `m`. */
#define FEDRUN_BACKEND_HAS(ops, m)                                                                 \
	((ops)->size >= offsetof(struct fedrun_backend_ops, m) + sizeof((ops)->m) && (ops)->m)

/* How a dropout op draws its mask from a struct fedrun_rng, so that every
 * backend draws the same one: buffered words are discarded; element i then
 * takes word i % 4 of Philox block (c + i / 4), where c is the stream's
 * 64-bit block counter (ctr[0] low, ctr[1] high); it is kept when that word
 * is >= FEDRUN_DROPOUT_THRESHOLD(p). The stream is left at block
 * c + ceil(n / 4), buffer empty. Equivalently: the same words that n calls
 * of fedrun_rng_u32 would return after discarding the buffer. */
#define FEDRUN_DROPOUT_THRESHOLD(p)                                                                \
	((uint32_t)((double)(p)*4294967296.0 < 4294967295.0 ? (double)(p)*4294967296.0             \
							    : 4294967295.0))

enum fedrun_act {
	FEDRUN_ACT_RELU = 0,
	FEDRUN_ACT_GELU = 1, /* tanh approximation (Hendrycks and Gimpel 2016, sec. 2) */
	FEDRUN_ACT_TANH = 2,
	FEDRUN_ACT_SIGMOID = 3,
	/* ABI 1.11: the exact GELU, x Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
	 * (Hendrycks and Gimpel 2016, sec. 2; BERT's and Hugging Face's
	 * "gelu"). A backend older than 1.11 refuses it as unknown. */
	FEDRUN_ACT_GELU_ERF = 4
};
#define FEDRUN_ACT_LAST FEDRUN_ACT_GELU_ERF

/* Settings of one execution context. Grows at the end; size first. */
struct fedrun_backend_ctx_cfg {
	uint32_t size;	  /* sizeof(struct fedrun_backend_ctx_cfg) */
	uint32_t threads; /* threads for the element-wise kernels; 0 = all */
	int32_t device;	  /* accelerator index; the CPU backend ignores it */
	/* Nonzero: a backend may use faster ops whose float sums depend on
	 * the order in which the device schedules work (atomic additions),
	 * so that two runs may differ in the last bits. 0, the default, keeps
	 * every op deterministic. The CPU backend is always deterministic. */
	uint32_t allow_nondeterministic;
	/* ABI 1.10: the precision of the matrix products (enum
	 * fedrun_precision). A backend whose ops table ends before
	 * declare_params predates this member and would ignore it: callers
	 * MUST NOT ask such a backend for anything but FEDRUN_PRECISION_FP32
	 * (the models refuse, naming the backend). ctx_create fails, with a
	 * message naming what is missing (a library, a CPU feature), when the
	 * backend cannot give the precision asked for; it never falls back to
	 * FP32. */
	uint32_t precision;
};

/* What the matrix products of a context compute in: the operands of
 * sgemm, sgemm_strided_batched, linear_forward/backward, the GRU's input
 * and recurrent products and attention's two products (Q K^T and the
 * weights times V, forward and backward). Everything else (element-wise
 * ops, layer norm, softmax, losses, sums of gradients, the optimizer)
 * stays FP32 in every precision, and so do every array an op reads or
 * writes: only the operands inside a product are rounded.
 *  FP32  the products in FP32 (the default; the bits of ABI 1.9).
 *  BF16  each operand rounded to bfloat16 (8 significant bits, FP32's
 *        exponent; round to nearest even), products of two bf16 values
 *        exact, sums in FP32; results FP32. A product's error is then at
 *        most 2^-7 + 2^-16 of the sum of |a_i b_i| plus FP32's own.
 *  TF32  (GPU backends) operands rounded to 10 explicit mantissa bits on
 *        tensor cores, sums in FP32. */
enum fedrun_precision {
	FEDRUN_PRECISION_FP32 = 0,
	FEDRUN_PRECISION_BF16 = 1,
	FEDRUN_PRECISION_TF32 = 2
};

/* The precision's name as in the models' "precision" option ("fp32",
 * "bf16", "tf32"), or "?" for another value. */
const char *fedrun_precision_name(uint32_t precision);

/* Dimensions of a GRU layer over a sequence. */
struct fedrun_gru_dims {
	uint32_t steps;	 /* T: time steps */
	uint32_t batch;	 /* B */
	uint32_t input;	 /* I: input features */
	uint32_t hidden; /* H: hidden units */
};

/* A GRU layer's parameters (device memory; usually pointers into the
 * parameter arena). Biases may be NULL. */
struct fedrun_gru_weights {
	const float *w_ih; /* (3H,I) */
	const float *w_hh; /* (3H,H) */
	const float *b_ih; /* (3H) */
	const float *b_hh; /* (3H) */
};

/* Where gru_backward accumulates parameter gradients; NULL members are
 * skipped. Usually pointers into the gradient arena. */
struct fedrun_gru_grads {
	float *w_ih; /* (3H,I) */
	float *w_hh; /* (3H,H) */
	float *b_ih; /* (3H) */
	float *b_hh; /* (3H) */
};

/* Shape and options of the attention ops (attn_*). Rows of q, k, v hold
 * the heads side by side: row (b, t) of q is q + (b Tq + t) ldq, and head
 * h its floats [h dh, (h+1) dh). */
struct fedrun_attn_dims {
	uint32_t batch; /* B: sequences */
	uint32_t heads; /* H */
	uint32_t tq;	/* Tq: queries per sequence */
	uint32_t tk;	/* Tk: keys (and values) per sequence */
	uint32_t dh;	/* dh: features per head; D = H dh */
	/* Row strides in floats of q, k, v and of dq, dk, dv; 0 means D.
	 * A fused projection gives 3D (q, k, v) or 2D (k, v). */
	uint32_t ldq, ldk, ldv;
	uint32_t causal; /* nonzero: query i sees only keys j <= i + Tk - Tq */
	float scale;	 /* factor of the scores Q K^T; 0 means 1/sqrt(dh) */
	float dropout;	 /* dropout probability on the attention weights */
};

struct fedrun_backend_ops {
	uint32_t size; /* sizeof(struct fedrun_backend_ops) */
	const char *name;

	/* ---- contexts and memory ---- */
	/* cfg may be NULL (defaults). *ctx is owned by the caller, freed with
	 * ctx_destroy. */
	int (*ctx_create)(const struct fedrun_backend_ctx_cfg *cfg, void **ctx);
	void (*ctx_destroy)(void *ctx);
	/* Zero-filled, 64-byte aligned device memory; free with free_mem. */
	int (*alloc)(void *ctx, uint64_t bytes, void **p);
	void (*free_mem)(void *ctx, void *p);
	int (*zero)(void *ctx, void *p, uint64_t bytes);
	/* device to device; the ranges must not overlap */
	int (*copy)(void *ctx, void *dst, const void *src, uint64_t bytes);
	int (*to_device)(void *ctx, void *dst, const void *host_src, uint64_t bytes);
	/* waits for pending work, so host_dst is ready on return */
	int (*to_host)(void *ctx, void *host_dst, const void *src, uint64_t bytes);

	/* ---- matrix products ---- */
	int (*sgemm)(void *ctx, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
		     const float *a, int lda, const float *b, int ldb, float beta, float *c,
		     int ldc);
	int (*sgemm_strided_batched)(void *ctx, bool trans_a, bool trans_b, int m, int n, int k,
				     float alpha, const float *a, int lda, int64_t stride_a,
				     const float *b, int ldb, int64_t stride_b, float beta,
				     float *c, int ldc, int64_t stride_c, int batch);
	int (*linear_forward)(void *ctx, uint32_t N, uint32_t in, uint32_t out, const float *x,
			      const float *w, const float *b, float *y);
	int (*linear_backward)(void *ctx, uint32_t N, uint32_t in, uint32_t out, const float *x,
			       const float *w, const float *dy, float *dx, float *dw, float *db);

	/* ---- layers ---- */
	int (*embedding_forward)(void *ctx, uint32_t N, uint32_t V, uint32_t D, const int32_t *ids,
				 const float *w, float *out);
	int (*embedding_backward)(void *ctx, uint32_t N, uint32_t V, uint32_t D, const int32_t *ids,
				  const float *dout, float *dw);
	uint64_t (*gru_cache_floats)(void *ctx, const struct fedrun_gru_dims *d);
	int (*gru_forward)(void *ctx, const struct fedrun_gru_dims *d,
			   const struct fedrun_gru_weights *w, const float *x, const float *h0,
			   float *y, float *cache);
	int (*gru_backward)(void *ctx, const struct fedrun_gru_dims *d,
			    const struct fedrun_gru_weights *w, const float *x, const float *h0,
			    const float *y, float *cache, const float *dy, const float *dhT,
			    float *dx, float *dh0, const struct fedrun_gru_grads *g);
	int (*dropout_forward)(void *ctx, uint64_t n, float p, struct fedrun_rng *rng,
			       const float *x, float *y, uint8_t *mask);
	int (*dropout_backward)(void *ctx, uint64_t n, float p, const uint8_t *mask,
				const float *dy, float *dx);
	int (*softmax_xent)(void *ctx, uint32_t N, uint32_t V, const float *logits,
			    const int32_t *targets, double *loss, uint64_t *count, float *dlogits);
	int (*act_forward)(void *ctx, enum fedrun_act act, uint64_t n, const float *x, float *y);
	int (*act_backward)(void *ctx, enum fedrun_act act, uint64_t n, const float *x,
			    const float *dy, float *dx);

	/* ---- added after ABI 1.0: Transformer layers ---- */
	int (*layernorm_forward)(void *ctx, uint32_t N, uint32_t D, float eps, const float *x,
				 const float *gain, const float *bias, float *y, float *cache);
	int (*layernorm_backward)(void *ctx, uint32_t N, uint32_t D, const float *x,
				  const float *gain, const float *cache, const float *dy, float *dx,
				  float *dgain, float *dbias);
	uint64_t (*attn_cache_floats)(void *ctx, const struct fedrun_attn_dims *d);
	int (*attn_forward)(void *ctx, const struct fedrun_attn_dims *d, const float *q,
			    const float *k, const float *v, const int32_t *key_len,
			    struct fedrun_rng *rng, float *out, float *cache);
	int (*attn_backward)(void *ctx, const struct fedrun_attn_dims *d, const float *q,
			     const float *k, const float *v, const int32_t *key_len,
			     const float *cache, const float *dout, float *dq, float *dk,
			     float *dv);
	int (*posenc_forward)(void *ctx, uint32_t B, uint32_t T, uint32_t D, uint32_t pos0,
			      float scale, const float *x, float *y);
	int (*posenc_backward)(void *ctx, uint32_t B, uint32_t T, uint32_t D, float scale,
			       const float *dy, float *dx);
	int (*label_smoothed_xent)(void *ctx, uint32_t N, uint32_t V, float eps,
				   const float *logits, const int32_t *targets, double *loss,
				   double *nll, uint64_t *count, float *dlogits);

	/* ---- added after the Transformer layers: fused decoder backward ---- */
	int (*softmax_xent_db)(void *ctx, uint32_t N, uint32_t V, const float *logits,
			       const int32_t *targets, float scale, double *loss, uint64_t *count,
			       float *dlogits, float *db);

	/* ---- added for training on the device: the local optimizer ---- */
	int (*optim_step)(void *ctx, const struct fedrun_optim_cfg *cfg, double lr, uint64_t n,
			  float *params, float *grad, float *state, uint64_t *step, bool zero_grad);
	int (*prox_grad)(void *ctx, uint64_t n, float mu, const float *params,
			 const float *anchor, float *grad);

	/* ---- ABI 1.10: precision (ctx_cfg.precision) and parameters ---- */
	/* The n floats at p (device memory) hold parameters, read as
	 * weights by the products: until they are written through this
	 * context (to_device, copy or zero into them, optim_step on them) or
	 * declare_params is called again, the backend may keep forms derived
	 * from them (a BF16 context: their bf16 copies in the layout its
	 * products want), made once and used by every product until then. A
	 * caller that changes them in any other way calls declare_params again
	 * before the next op. n = 0 forgets the range. Optional: a caller
	 * checks FEDRUN_BACKEND_HAS; without the call nothing is kept. */
	int (*declare_params)(void *ctx, const float *p, uint64_t n);
};

/* The dimensions of one attention call, checked and with the defaults of
 * struct fedrun_attn_dims resolved: for backends, which all take them the
 * same way. */
struct fedrun_attn_geometry {
	uint32_t B, H, Tq, Tk, dh, D; /* D = H dh */
	uint32_t ldq, ldk, ldv;	      /* 0 replaced by D */
	float scale;		      /* 0 replaced by 1/sqrt(dh) */
	float p;		      /* dropout */
	int causal;
};

/* Checks d for op `op` (named in the message) and fills g: every size
 * nonzero, D and Tq Tk within INT_MAX, strides in [D, INT_MAX], a finite
 * scale, dropout in [0, 1); q, k, v and cache not NULL. FEDRUN_EINVAL
 * otherwise. key_len's values are device memory and are not checked here. */
int fedrun_attn_resolve(const char *op, const struct fedrun_attn_dims *d, const void *q,
			const void *k, const void *v, const void *cache,
			struct fedrun_attn_geometry *g);

/* The built-in CPU backend: OpenBLAS (any CBLAS) for matrix products,
 * OpenMP for the element-wise kernels. Static; never NULL. */
const struct fedrun_backend_ops *fedrun_backend_cpu(void);

/* The kernels of the CPU backend's bf16 products (contexts of precision
 * FEDRUN_PRECISION_BF16): "amx_bf16" (AMX tiles) or "avx512_bf16", the
 * best oneDNN may use on this CPU (DNNL_MAX_CPU_ISA caps it), or NULL with
 * a message recorded (fedrun_error) naming what is missing when a bf16
 * context cannot be made: libfedrun built without oneDNN, or a CPU with
 * neither feature. */
const char *fedrun_backend_cpu_bf16_isa(void);

/* The backend called `name`: "cpu" is the built-in one; any other name is
 * a plugin of kind FEDRUN_KIND_BACKEND found in the plugin search path
 * ($FEDRUN_PLUGIN_PATH, then the installed plugin directory), loaded once
 * and kept for the life of the process. Thread-safe. FEDRUN_ENOENT (with
 * the search path in the message) when no such plugin is installed. */
int fedrun_backend_find(const char *name, const struct fedrun_backend_ops **out);

/* Sets the number of threads of the CBLAS library itself, which is separate
 * from the OpenMP threads of ctx_cfg.threads and, for OpenBLAS, global to
 * the process. The calling thread's OpenMP default is left as it was (an
 * OpenMP build of OpenBLAS would change it). Returns FEDRUN_EUNSUPPORTED
 * when the CBLAS that libfedrun was built with offers no such control (n is
 * then ignored). n >= 1. */
int fedrun_backend_cpu_set_blas_threads(uint32_t n);
/* The CBLAS library's thread count, or 0 when unknown. */
uint32_t fedrun_backend_cpu_blas_threads(void);

#ifdef __cplusplus
}
#endif
#endif
