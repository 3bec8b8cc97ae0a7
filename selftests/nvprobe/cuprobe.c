// SPDX-License-Identifier: GPL-2.0
/*
 * cuprobe: loads NVIDIA's CUDA driver library (libcuda.so.1, with
 * dlopen, so this program builds and starts without it) and reports what
 * its first calls return, one "name=value" per line on stdout:
 *
 *   dlopen=ok                      (or "dlopen=error <dlerror()>", exit 2)
 *   cuInit=N                       CUresult of cuInit(0)
 *   cuDriverGetVersion=N version=V CUresult, and the version (e.g. 12040)
 *   cuDeviceGetCount=N count=C     CUresult, and the device count
 *   cuDeviceGet=N device=D         CUresult, and device 0's handle
 *   cuDeviceGetName=N name=TEXT    CUresult, and its name (the rest of
 *                                  the line, spaces included)
 *   cuDeviceTotalMem_v2=N bytes=B  CUresult, and its memory in bytes
 *   cuCtxCreate_v2=N               CUresult of a context on it (flags 0)
 *   cuMemGetInfo_v2=N free=F total=T  CUresult, and the context's figures
 *   cuCtxDestroy_v2=N              CUresult (only after a context was made)
 *
 * With --fill, between cuMemGetInfo_v2 and cuCtxDestroy_v2, the context
 * allocates device memory in 64 MiB steps (cuMemAlloc_v2) until a call
 * fails (at most 1024 steps), then frees what it got (cuMemFree_v2):
 *
 *   fill=N steps=K bytes=B          the failing CUresult (0: none failed),
 *                                  the steps that succeeded and their bytes
 *   fillfree=N                     the first failing cuMemFree_v2 (or 0)
 *
 * A missing entry point prints "NAME=missing"; a call after a failed
 * cuDeviceGet uses device 0 all the same. The exit status is 0 whatever
 * the CUresults are: the test reads the numbers.
 *
 *   cuprobe [--fill] [LIBRARY]     (default libcuda.so.1)
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef int (*cu_init_fn)(unsigned int);
typedef int (*cu_int_out_fn)(int *);
typedef int (*cu_device_get_fn)(int *, int);
typedef int (*cu_device_name_fn)(char *, int, int);
typedef int (*cu_device_mem_fn)(size_t *, int);
typedef int (*cu_ctx_create_fn)(void **, unsigned int, int);
typedef int (*cu_mem_info_fn)(size_t *, size_t *);
typedef int (*cu_ctx_destroy_fn)(void *);
typedef int (*cu_mem_alloc_fn)(unsigned long long *, size_t);
typedef int (*cu_mem_free_fn)(unsigned long long);

#define FILL_STEP ((size_t)64 << 20)
#define FILL_MAX 1024

/* --fill: 64 MiB steps until one fails, then frees them (see above). */
static void fill(void *h)
{
	static unsigned long long got[FILL_MAX];
	cu_mem_alloc_fn alloc = (cu_mem_alloc_fn)dlsym(h, "cuMemAlloc_v2");
	cu_mem_free_fn release = (cu_mem_free_fn)dlsym(h, "cuMemFree_v2");
	int r = 0, fr = 0, k = 0, i;

	if (!alloc || !release) {
		printf("fill=missing\n");
		return;
	}
	while (k < FILL_MAX) {
		r = alloc(&got[k], FILL_STEP);
		if (r != 0)
			break;
		k++;
	}
	printf("fill=%d steps=%d bytes=%zu\n", r, k, (size_t)k * FILL_STEP);
	for (i = 0; i < k; i++) {
		int x = release(got[i]);

		if (x != 0 && fr == 0)
			fr = x;
	}
	printf("fillfree=%d\n", fr);
}

int main(int argc, char **argv)
{
	int do_fill = argc > 1 && strcmp(argv[1], "--fill") == 0;
	const char *lib = argc > 1 + do_fill ? argv[1 + do_fill] : "libcuda.so.1";
	cu_init_fn init;
	cu_int_out_fn version, count;
	cu_device_get_fn device_get;
	cu_device_name_fn device_name;
	cu_device_mem_fn device_mem;
	cu_ctx_create_fn ctx_create;
	cu_mem_info_fn mem_info;
	cu_ctx_destroy_fn ctx_destroy;
	void *h, *ctx = NULL;
	char name[256];
	size_t bytes, free_b, total_b;
	int r, v, dev = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		printf("dlopen=error %s\n", dlerror());
		return 2;
	}
	printf("dlopen=ok\n");

	init = (cu_init_fn)dlsym(h, "cuInit");
	version = (cu_int_out_fn)dlsym(h, "cuDriverGetVersion");
	count = (cu_int_out_fn)dlsym(h, "cuDeviceGetCount");
	device_get = (cu_device_get_fn)dlsym(h, "cuDeviceGet");
	device_name = (cu_device_name_fn)dlsym(h, "cuDeviceGetName");
	device_mem = (cu_device_mem_fn)dlsym(h, "cuDeviceTotalMem_v2");
	ctx_create = (cu_ctx_create_fn)dlsym(h, "cuCtxCreate_v2");
	mem_info = (cu_mem_info_fn)dlsym(h, "cuMemGetInfo_v2");
	ctx_destroy = (cu_ctx_destroy_fn)dlsym(h, "cuCtxDestroy_v2");

	if (init)
		printf("cuInit=%d\n", init(0));
	else
		printf("cuInit=missing\n");
	if (version) {
		v = -1;
		r = version(&v);
		printf("cuDriverGetVersion=%d version=%d\n", r, v);
	} else {
		printf("cuDriverGetVersion=missing\n");
	}
	if (count) {
		v = -1;
		r = count(&v);
		printf("cuDeviceGetCount=%d count=%d\n", r, v);
	} else {
		printf("cuDeviceGetCount=missing\n");
	}
	if (device_get) {
		v = -1;
		r = device_get(&v, 0);
		printf("cuDeviceGet=%d device=%d\n", r, v);
		if (r == 0)
			dev = v;
	} else {
		printf("cuDeviceGet=missing\n");
	}
	if (device_name) {
		name[0] = '\0';
		r = device_name(name, (int)sizeof(name), dev);
		name[sizeof(name) - 1] = '\0';
		printf("cuDeviceGetName=%d name=%s\n", r, name);
	} else {
		printf("cuDeviceGetName=missing\n");
	}
	if (device_mem) {
		bytes = 0;
		r = device_mem(&bytes, dev);
		printf("cuDeviceTotalMem_v2=%d bytes=%zu\n", r, bytes);
	} else {
		printf("cuDeviceTotalMem_v2=missing\n");
	}
	if (ctx_create) {
		r = ctx_create(&ctx, 0, dev);
		printf("cuCtxCreate_v2=%d\n", r);
		if (r != 0)
			ctx = NULL;
	} else {
		printf("cuCtxCreate_v2=missing\n");
	}
	if (mem_info) {
		free_b = 0;
		total_b = 0;
		r = mem_info(&free_b, &total_b);
		printf("cuMemGetInfo_v2=%d free=%zu total=%zu\n", r, free_b,
		       total_b);
	} else {
		printf("cuMemGetInfo_v2=missing\n");
	}
	if (do_fill && ctx)
		fill(h);
	if (!ctx_destroy)
		printf("cuCtxDestroy_v2=missing\n");
	else if (ctx)
		printf("cuCtxDestroy_v2=%d\n", ctx_destroy(ctx));
	return 0;
}
