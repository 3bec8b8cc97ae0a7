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
 *
 * A missing entry point prints "NAME=missing". The exit status is 0
 * whatever the CUresults are: the test reads the numbers.
 *
 *   cuprobe [LIBRARY]              (default libcuda.so.1)
 */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*cu_init_fn)(unsigned int);
typedef int (*cu_int_out_fn)(int *);

int main(int argc, char **argv)
{
	const char *lib = argc > 1 ? argv[1] : "libcuda.so.1";
	cu_init_fn init;
	cu_int_out_fn version, count;
	void *h;
	int r, v;

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
	return 0;
}
