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
 * With --pairs, then: 100 pairs of cuMemAlloc_v2 (2 MiB) and
 * cuMemFree_v2 (make bench's libcuda figure):
 *
 *   pairs=N count=K                the first failing CUresult (0: none),
 *                                  and the pairs made
 *
 * With --copy, then: a 1 MiB device buffer (cuMemAlloc_v2) gets a
 * pattern from the host (cuMemcpyHtoD_v2) and is read back into a second
 * host buffer (cuMemcpyDtoH_v2), which is compared byte for byte:
 *
 *   copy=N htod=N dtoh=N match=M   cuMemAlloc_v2's CUresult, the copies',
 *                                  and 1 when every byte came back
 *
 * With --launch, then: a kernel in PTX (text, compiled on the CPU by
 * libnvidia-ptxjitcompiler) is loaded, launched on one thread and waited
 * for:
 *
 *   module=N launch=N sync=N       cuModuleLoadData, cuLaunchKernel and
 *                                  cuCtxSynchronize's CUresults
 *
 * With --managed, then: managed memory (cuMemAllocManaged) in 64 MiB
 * steps, each prefetched to the device (cuMemPrefetchAsync, then
 * cuCtxSynchronize), until a call fails or 64 steps are made; then freed:
 *
 *   managed=N prefetch=N steps=K   the first failing CUresults (0: none)
 *                                  and the steps allocated
 *
 * after the device's attributes for it (cuDeviceGetAttribute):
 *
 *   attributes=N managed=A concurrent=C pageable=P
 *                                  its CUresult, MANAGED_MEMORY (83),
 *                                  CONCURRENT_MANAGED_ACCESS (89) and
 *                                  PAGEABLE_MEMORY_ACCESS (88)
 *
 * With --spin, then: the context was made with CU_CTX_SCHED_YIELD (a
 * waiting thread yields its CPU); the kernel above is loaded and
 * "ready" printed, and after a line (or end of file) on standard input,
 * grids of SPIN_CTAS CTAs are launched in batches of SPIN_BATCH, each
 * batch followed by an event (cuEventRecord) and the previous batch's
 * event waited for (cuEventSynchronize), so that one batch is always
 * queued, until SPIN_MS have passed (CLOCK_MONOTONIC); the driver double
 * gives each CTA 1 us of its engine, so the launches a process completes
 * measure its share:
 *
 *   spin=N launches=K ms=T cpu=C   the first failing CUresult (0: none),
 *                                  the grids completed in T ms, and the
 *                                  CPU time the process used meanwhile
 *
 * With --hold, last before cuCtxDestroy_v2: prints "held" and waits for a
 * line (or end of file) on standard input, so that a test can read what
 * the live context holds.
 *
 * A missing entry point prints "NAME=missing"; a call after a failed
 * cuDeviceGet uses device 0 all the same. The exit status is 0 whatever
 * the CUresults are: the test reads the numbers.
 *
 *   cuprobe [--fill] [--pairs] [--copy] [--launch] [--managed] [--spin] [--hold]
 *           [LIBRARY]
 *                                  (default libcuda.so.1)
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

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

typedef int (*cu_copy_to_fn)(unsigned long long, const void *, size_t);
typedef int (*cu_copy_from_fn)(void *, unsigned long long, size_t);
typedef int (*cu_module_load_fn)(void **, const void *);
typedef int (*cu_module_function_fn)(void **, void *, const char *);
typedef int (*cu_launch_fn)(void *, unsigned int, unsigned int, unsigned int,
			    unsigned int, unsigned int, unsigned int,
			    unsigned int, void *, void **, void **);
typedef int (*cu_void_fn)(void);
typedef int (*cu_managed_fn)(unsigned long long *, size_t, unsigned int);
typedef int (*cu_prefetch_fn)(unsigned long long, size_t, int, void *);
typedef int (*cu_attribute_fn)(int *, int, int);
typedef int (*cu_event_create_fn)(void **, unsigned int);
typedef int (*cu_event_record_fn)(void *, void *);
typedef int (*cu_event_fn)(void *);

#define FILL_STEP ((size_t)64 << 20)
#define FILL_MAX 1024
#define PAIRS 100
#define PAIR_BYTES ((size_t)2 << 20)
#define COPY_BYTES ((size_t)1 << 20)
#define MANAGED_MAX 64
#define CU_MEM_ATTACH_GLOBAL 1
#define CU_CTX_SCHED_YIELD 2
#define SPIN_CTAS 100000
#define SPIN_BATCH 2
#define SPIN_MS 10000

/*
 * The kernel --launch runs: stores its second argument at its first.
 * PTX ISA 7.0 for sm_52, which every libnvidia-ptxjitcompiler since CUDA
 * 11.0 compiles for newer GPUs (the double's H100 is sm_90).
 */
static const char ptx[] =
	".version 7.0\n"
	".target sm_52\n"
	".address_size 64\n"
	".visible .entry store(.param .u64 p, .param .u32 v)\n"
	"{\n"
	"\t.reg .b64 %rd<3>;\n"
	"\t.reg .b32 %r<2>;\n"
	"\tld.param.u64 %rd1, [p];\n"
	"\tld.param.u32 %r1, [v];\n"
	"\tcvta.to.global.u64 %rd2, %rd1;\n"
	"\tst.global.u32 [%rd2], %r1;\n"
	"\tret;\n"
	"}\n";

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

/* --pairs: 100 alloc/free pairs (see above). */
static void pairs(void *h)
{
	cu_mem_alloc_fn alloc = (cu_mem_alloc_fn)dlsym(h, "cuMemAlloc_v2");
	cu_mem_free_fn release = (cu_mem_free_fn)dlsym(h, "cuMemFree_v2");
	unsigned long long d;
	int r = 0, k;

	if (!alloc || !release) {
		printf("pairs=missing\n");
		return;
	}
	for (k = 0; k < PAIRS && r == 0; k++) {
		r = alloc(&d, PAIR_BYTES);
		if (r == 0)
			r = release(d);
	}
	printf("pairs=%d count=%d\n", r, r == 0 ? k : k - 1);
}

/* --copy: a 1 MiB round trip through device memory (see above). */
static void copy(void *h)
{
	cu_mem_alloc_fn alloc = (cu_mem_alloc_fn)dlsym(h, "cuMemAlloc_v2");
	cu_mem_free_fn release = (cu_mem_free_fn)dlsym(h, "cuMemFree_v2");
	cu_copy_to_fn to = (cu_copy_to_fn)dlsym(h, "cuMemcpyHtoD_v2");
	cu_copy_from_fn from = (cu_copy_from_fn)dlsym(h, "cuMemcpyDtoH_v2");
	unsigned char *src = malloc(COPY_BYTES), *dst = malloc(COPY_BYTES);
	unsigned long long d = 0;
	int a, t = -1, f = -1;
	size_t i;

	if (!alloc || !release || !to || !from || !src || !dst) {
		printf("copy=missing\n");
		goto out;
	}
	for (i = 0; i < COPY_BYTES; i++) {
		src[i] = (unsigned char)(i * 131 + (i >> 12) + 7);
		dst[i] = (unsigned char)~src[i];
	}
	a = alloc(&d, COPY_BYTES);
	if (a == 0) {
		t = to(d, src, COPY_BYTES);
		f = from(dst, d, COPY_BYTES);
		release(d);
	}
	printf("copy=%d htod=%d dtoh=%d match=%d\n", a, t, f,
	       a == 0 && t == 0 && f == 0 && !memcmp(src, dst, COPY_BYTES));
out:
	free(src);
	free(dst);
}

/*
 * The PTX kernel above, loaded (cuModuleLoadData) and its function
 * found (cuModuleGetFunction) into *fn: the first failing CUresult (0:
 * none), or -1 when libcuda lacks either entry point.
 */
static int load_store(void *h, void **fn)
{
	cu_module_load_fn load = (cu_module_load_fn)dlsym(h, "cuModuleLoadData");
	cu_module_function_fn get =
		(cu_module_function_fn)dlsym(h, "cuModuleGetFunction");
	void *module = NULL;
	int r;

	if (!load || !get)
		return -1;
	r = load(&module, ptx);
	if (r == 0)
		r = get(fn, module, "store");
	return r;
}

/* --launch: one thread of the PTX kernel above, waited for. */
static void launch(void *h)
{
	cu_launch_fn run = (cu_launch_fn)dlsym(h, "cuLaunchKernel");
	cu_void_fn sync = (cu_void_fn)dlsym(h, "cuCtxSynchronize");
	cu_mem_alloc_fn alloc = (cu_mem_alloc_fn)dlsym(h, "cuMemAlloc_v2");
	cu_mem_free_fn release = (cu_mem_free_fn)dlsym(h, "cuMemFree_v2");
	void *fn = NULL, *args[2];
	unsigned long long d = 0;
	unsigned int v = 0x600d;
	int m = -1, l = -1, s = -1;

	if (run && sync && alloc && release)
		m = load_store(h, &fn);
	if (m == -1) {
		printf("module=missing\n");
		return;
	}
	if (m == 0 && alloc(&d, 4096) == 0) {
		args[0] = &d;
		args[1] = &v;
		l = run(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
		s = sync();
		release(d);
	}
	printf("module=%d launch=%d sync=%d\n", m, l, s);
}

/* Milliseconds of CLOCK_MONOTONIC since `t0`. */
static long since_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000L +
	       (t.tv_nsec - t0->tv_nsec) / 1000000L;
}

/* --spin: batches of grids for SPIN_MS, after a go on stdin (see above). */
static void spin(void *h)
{
	cu_launch_fn run = (cu_launch_fn)dlsym(h, "cuLaunchKernel");
	cu_event_create_fn ev_create =
		(cu_event_create_fn)dlsym(h, "cuEventCreate");
	cu_event_fn ev_sync = (cu_event_fn)dlsym(h, "cuEventSynchronize");
	cu_event_record_fn ev_record =
		(cu_event_record_fn)dlsym(h, "cuEventRecord");
	cu_event_fn ev_destroy = (cu_event_fn)dlsym(h, "cuEventDestroy_v2");
	cu_void_fn sync = (cu_void_fn)dlsym(h, "cuCtxSynchronize");
	cu_mem_alloc_fn alloc = (cu_mem_alloc_fn)dlsym(h, "cuMemAlloc_v2");
	cu_mem_free_fn release = (cu_mem_free_fn)dlsym(h, "cuMemFree_v2");
	void *fn = NULL, *args[2], *ev[2] = { NULL, NULL };
	unsigned long long d = 0;
	unsigned int v = 1;
	long launches = 0, ms = 0, k;
	struct timespec t0;
	struct rusage ru0, ru1;
	char line[16];
	int r = -1, i;

	if (run && ev_create && ev_sync && ev_record && ev_destroy && sync &&
	    alloc && release)
		r = load_store(h, &fn);
	if (r == -1) {
		printf("spin=missing\n");
		return;
	}
	if (r == 0)
		r = alloc(&d, 4096);
	for (i = 0; i < 2 && r == 0; i++)
		r = ev_create(&ev[i], 0);
	if (r != 0) {
		printf("spin=%d launches=0 ms=0 cpu=0\n", r);
		return;
	}
	printf("ready\n");
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0';
	args[0] = &d;
	args[1] = &v;
	getrusage(RUSAGE_SELF, &ru0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/*
	 * Batch k is queued, then batch k - 1 waited for: one batch is
	 * always queued behind the one running, so the GPU never waits for
	 * the CPU to queue more.
	 */
	for (k = 0; r == 0; k++) {
		for (i = 0; i < SPIN_BATCH && r == 0; i++)
			r = run(fn, SPIN_CTAS, 1, 1, 1, 1, 1, 0, NULL, args,
				NULL);
		if (r == 0)
			r = ev_record(ev[k & 1], NULL);
		if (r == 0 && k > 0) {
			r = ev_sync(ev[(k - 1) & 1]);
			if (r == 0) {
				launches += SPIN_BATCH;
				ms = since_ms(&t0);
				if (ms >= SPIN_MS)
					break;
			}
		}
	}
	getrusage(RUSAGE_SELF, &ru1);
	if (r == 0)
		r = sync();
	for (i = 0; i < 2; i++)
		ev_destroy(ev[i]);
	release(d);
	printf("spin=%d launches=%ld ms=%ld cpu=%ld\n", r, launches, ms,
	       (ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec +
		ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1000L +
		       (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec +
			ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1000L);
}

/* --managed: 64 MiB managed steps, each prefetched (see above). */
static void managed(void *h, int dev)
{
	static unsigned long long got[MANAGED_MAX];
	cu_managed_fn alloc = (cu_managed_fn)dlsym(h, "cuMemAllocManaged");
	cu_prefetch_fn prefetch = (cu_prefetch_fn)dlsym(h, "cuMemPrefetchAsync");
	cu_void_fn sync = (cu_void_fn)dlsym(h, "cuCtxSynchronize");
	cu_mem_free_fn release = (cu_mem_free_fn)dlsym(h, "cuMemFree_v2");
	cu_attribute_fn attr = (cu_attribute_fn)dlsym(h, "cuDeviceGetAttribute");
	int a = 0, p = 0, k = 0, i, m = -1, c = -1, g = -1;

	if (!alloc || !prefetch || !sync || !release || !attr) {
		printf("managed=missing\n");
		return;
	}
	a = attr(&m, 83, dev);
	if (a == 0)
		a = attr(&c, 89, dev);
	if (a == 0)
		a = attr(&g, 88, dev);
	printf("attributes=%d managed=%d concurrent=%d pageable=%d\n", a, m, c,
	       g);
	while (k < MANAGED_MAX) {
		a = alloc(&got[k], FILL_STEP, CU_MEM_ATTACH_GLOBAL);
		if (a != 0)
			break;
		k++;
		p = prefetch(got[k - 1], FILL_STEP, dev, NULL);
		if (p == 0)
			p = sync();
		if (p != 0)
			break;
	}
	printf("managed=%d prefetch=%d steps=%d\n", a, p, k);
	for (i = 0; i < k; i++)
		release(got[i]);
}

int main(int argc, char **argv)
{
	int do_fill = 0, do_pairs = 0, do_copy = 0, do_launch = 0, do_managed = 0;
	int do_hold = 0, do_spin = 0, i;
	const char *lib = "libcuda.so.1";
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

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--fill"))
			do_fill = 1;
		else if (!strcmp(argv[i], "--pairs"))
			do_pairs = 1;
		else if (!strcmp(argv[i], "--copy"))
			do_copy = 1;
		else if (!strcmp(argv[i], "--launch"))
			do_launch = 1;
		else if (!strcmp(argv[i], "--managed"))
			do_managed = 1;
		else if (!strcmp(argv[i], "--hold"))
			do_hold = 1;
		else if (!strcmp(argv[i], "--spin"))
			do_spin = 1;
		else
			lib = argv[i];
	}
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
		r = ctx_create(&ctx, do_spin ? CU_CTX_SCHED_YIELD : 0, dev);
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
	if (do_pairs && ctx)
		pairs(h);
	if (do_copy && ctx)
		copy(h);
	if (do_launch && ctx)
		launch(h);
	if (do_managed && ctx)
		managed(h, dev);
	if (do_spin && ctx)
		spin(h);
	if (do_hold && ctx) {
		char line[16];

		printf("held\n");
		if (!fgets(line, sizeof(line), stdin))
			line[0] = '\0';
	}
	if (!ctx_destroy)
		printf("cuCtxDestroy_v2=missing\n");
	else if (ctx)
		printf("cuCtxDestroy_v2=%d\n", ctx_destroy(ctx));
	return 0;
}
