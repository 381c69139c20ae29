/* SPDX-License-Identifier: Apache-2.0 */
/* bench/cudnn_gru: the CUDA backend's GRU layer (cuBLAS products and one
 * fused gate kernel per step, plugins/backends/cuda/gru.cu) against
 * cuDNN's GRU (cudnnRNNForward, cudnnRNNBackwardData_v8,
 * cudnnRNNBackwardWeights_v8), the choice issue 12 leaves to measurement.
 *
 * Usage: bench/cudnn_gru [T B H...]   (default: T 35, B 20, H 300 650
 *        1500: gru-lm's windows at the FedAtt paper's three sizes)
 * One layer, input size = hidden size, FP32 arithmetic on both sides
 * (cuDNN with CUDNN_FMA_MATH: no TF32), biases on both sides, training
 * mode: a forward pass that keeps what backward needs, then backward for
 * the input, the initial state and the weights (accumulated). Each side
 * runs 5 untimed passes, then 50 timed ones back to back, waited for at
 * the end; prints the milliseconds per forward+backward and the ratio
 * (cuDNN / fedrun: above 1, fedrun's is faster). FEDRUN_PLUGIN_PATH must
 * reach the CUDA backend plugin. Exits 77 without a GPU. */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <vector>
#include "fedrun/backend.h"
#include "fedrun/error.h"

static double now()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "cudnn_gru: %s: %s\n", #call, cudaGetErrorString(e_));     \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)
#define DN(call)                                                                                   \
	do {                                                                                       \
		cudnnStatus_t s_ = (call);                                                         \
		if (s_ != CUDNN_STATUS_SUCCESS) {                                                  \
			fprintf(stderr, "cudnn_gru: %s: %s\n", #call, cudnnGetErrorString(s_));    \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)
#define FR(call)                                                                                   \
	do {                                                                                       \
		if ((call) < 0) {                                                                  \
			fprintf(stderr, "cudnn_gru: %s: %s\n", #call, fedrun_error_message());     \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static float *dev(size_t n)
{
	std::vector<float> h(n);
	for (size_t i = 0; i < n; i++)
		h[i] = (float)((i * 2654435761u) % 1000) / 1000.0f * 0.2f - 0.1f;
	float *p;
	CK(cudaMalloc(&p, n * sizeof(float)));
	CK(cudaMemcpy(p, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	return p;
}

/* ms per forward+backward of fedrun's CUDA backend */
static double ours(const struct fedrun_backend_ops *be, int T, int B, int H)
{
	void *ctx;
	FR(be->ctx_create(NULL, &ctx));
	struct fedrun_gru_dims d = {(uint32_t)T, (uint32_t)B, (uint32_t)H, (uint32_t)H};
	size_t TBH = (size_t)T * B * H;
	float *x = dev(TBH), *h0 = dev((size_t)B * H), *y = dev(TBH), *dy = dev(TBH);
	float *dx = dev(TBH), *dh0 = dev((size_t)B * H);
	float *wih = dev(3 * (size_t)H * H), *whh = dev(3 * (size_t)H * H), *bih = dev(3 * H),
	      *bhh = dev(3 * H);
	float *gwih = dev(3 * (size_t)H * H), *gwhh = dev(3 * (size_t)H * H), *gbih = dev(3 * H),
	      *gbhh = dev(3 * H);
	float *cache = dev(be->gru_cache_floats(ctx, &d)), probe;
	struct fedrun_gru_weights w = {wih, whh, bih, bhh};
	struct fedrun_gru_grads g = {gwih, gwhh, gbih, gbhh};
	double t0 = 0;
	for (int r = 0; r < 55; r++) {
		if (r == 5) {
			FR(be->to_host(ctx, &probe, y, sizeof probe));
			t0 = now();
		}
		FR(be->gru_forward(ctx, &d, &w, x, h0, y, cache));
		FR(be->gru_backward(ctx, &d, &w, x, h0, y, cache, dy, NULL, dx, dh0, &g));
	}
	FR(be->to_host(ctx, &probe, y, sizeof probe));
	double ms = (now() - t0) / 50 * 1e3;
	float *all[] = {x, h0, y, dy, dx, dh0, wih, whh, bih, bhh, gwih, gwhh, gbih, gbhh, cache};
	for (float *p : all)
		cudaFree(p);
	be->ctx_destroy(ctx);
	return ms;
}

/* ms per forward+backward of cuDNN's GRU */
static double cudnn(int T, int B, int H)
{
	cudnnHandle_t h;
	DN(cudnnCreate(&h));
	cudnnDropoutDescriptor_t drop;
	DN(cudnnCreateDropoutDescriptor(&drop));
	size_t states = 0;
	DN(cudnnDropoutGetStatesSize(h, &states));
	void *st;
	CK(cudaMalloc(&st, states ? states : 1));
	DN(cudnnSetDropoutDescriptor(drop, h, 0.0f, st, states, 1));
	cudnnRNNDescriptor_t rnn;
	DN(cudnnCreateRNNDescriptor(&rnn));
	DN(cudnnSetRNNDescriptor_v8(rnn, CUDNN_RNN_ALGO_STANDARD, CUDNN_GRU, CUDNN_RNN_DOUBLE_BIAS,
				    CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT,
				    CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, H, H, H, 1, drop, 0));
	std::vector<int> lens(B, T);
	cudnnRNNDataDescriptor_t xd, yd;
	DN(cudnnCreateRNNDataDescriptor(&xd));
	DN(cudnnCreateRNNDataDescriptor(&yd));
	DN(cudnnSetRNNDataDescriptor(xd, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, T,
				     B, H, lens.data(), NULL));
	DN(cudnnSetRNNDataDescriptor(yd, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, T,
				     B, H, lens.data(), NULL));
	cudnnTensorDescriptor_t hd;
	DN(cudnnCreateTensorDescriptor(&hd));
	int dims[3] = {1, B, H}, strides[3] = {B * H, H, 1};
	DN(cudnnSetTensorNdDescriptor(hd, CUDNN_DATA_FLOAT, 3, dims, strides));
	int32_t *dlens;
	CK(cudaMalloc(&dlens, B * sizeof(int32_t)));
	CK(cudaMemcpy(dlens, lens.data(), B * sizeof(int32_t), cudaMemcpyHostToDevice));
	size_t wbytes, work, reserve;
	DN(cudnnGetRNNWeightSpaceSize(h, rnn, &wbytes));
	DN(cudnnGetRNNTempSpaceSizes(h, rnn, CUDNN_FWD_MODE_TRAINING, xd, &work, &reserve));
	size_t TBH = (size_t)T * B * H;
	float *x = dev(TBH), *h0 = dev((size_t)B * H), *y = dev(TBH), *dy = dev(TBH);
	float *dx = dev(TBH), *dh0 = dev((size_t)B * H), *hy = dev((size_t)B * H);
	float *wsp = dev(wbytes / 4 + 1), *dwsp = dev(wbytes / 4 + 1);
	void *ws, *rs;
	CK(cudaMalloc(&ws, work ? work : 1));
	CK(cudaMalloc(&rs, reserve ? reserve : 1));
	double t0 = 0;
	for (int r = 0; r < 55; r++) {
		if (r == 5) {
			CK(cudaDeviceSynchronize());
			t0 = now();
		}
		DN(cudnnRNNForward(h, rnn, CUDNN_FWD_MODE_TRAINING, dlens, xd, x, yd, y, hd, h0, hy,
				   NULL, NULL, NULL, wbytes, wsp, work, ws, reserve, rs));
		DN(cudnnRNNBackwardData_v8(h, rnn, dlens, yd, y, dy, xd, dx, hd, h0, NULL, dh0, NULL,
					   NULL, NULL, NULL, wbytes, wsp, work, ws, reserve, rs));
		DN(cudnnRNNBackwardWeights_v8(h, rnn, CUDNN_WGRAD_MODE_ADD, dlens, xd, x, hd, h0, yd, y,
					      wbytes, dwsp, work, ws, reserve, rs));
	}
	CK(cudaDeviceSynchronize());
	double ms = (now() - t0) / 50 * 1e3;
	float *all[] = {x, h0, y, dy, dx, dh0, hy, wsp, dwsp};
	for (float *p : all)
		cudaFree(p);
	cudaFree(ws);
	cudaFree(rs);
	cudaFree(st);
	cudaFree(dlens);
	cudnnDestroyTensorDescriptor(hd);
	cudnnDestroyRNNDataDescriptor(xd);
	cudnnDestroyRNNDataDescriptor(yd);
	cudnnDestroyRNNDescriptor(rnn);
	cudnnDestroyDropoutDescriptor(drop);
	cudnnDestroy(h);
	return ms;
}

int main(int argc, char **argv)
{
	const struct fedrun_backend_ops *be;
	void *probe;
	if (fedrun_backend_find("cuda", &be) < 0 || be->ctx_create(NULL, &probe) < 0) {
		fprintf(stderr, "cudnn_gru: %s\n", fedrun_error_message());
		return 77;
	}
	be->ctx_destroy(probe);
	int T = argc > 1 ? atoi(argv[1]) : 35, B = argc > 2 ? atoi(argv[2]) : 20;
	std::vector<int> hs;
	for (int i = 3; i < argc; i++)
		hs.push_back(atoi(argv[i]));
	if (hs.empty())
		hs = {300, 650, 1500};
	printf("cuDNN %zu; GRU, one layer, T %d, B %d, FP32, forward + backward (ms)\n",
	       cudnnGetVersion(), T, B);
	for (int H : hs) {
		double a = ours(be, T, B, H), b = cudnn(T, B, H);
		printf("gru H %d: fedrun %.3f ms | cudnn %.3f ms | cudnn / fedrun %.2f\n", H, a, b,
		       b / a);
	}
	return 0;
}
