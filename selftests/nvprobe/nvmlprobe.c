// SPDX-License-Identifier: GPL-2.0
/*
 * nvmlprobe: loads NVIDIA's management library (libnvidia-ml.so.1, with
 * dlopen, so this program builds and starts without it; no NVIDIA header:
 * the few prototypes and structs are declared here, as NVML documents
 * them) and reports what a monitoring agent's first calls return, one
 * "name=value ..." line each on stdout:
 *
 *   dlopen=ok                       (or "dlopen=error <dlerror()>", exit 2)
 *   nvmlInit_v2=R                   R: the nvmlReturn_t (0 NVML_SUCCESS)
 *   nvmlDeviceGetCount_v2=R count=N
 *   then for each device I < N:
 *   gpu=I handle=R
 *   gpu=I name=R value=NAME
 *   gpu=I uuid=R value=UUID
 *   gpu=I pci=R busId=ID domain=D bus=B device=V pciDeviceId=0xX
 *   gpu=I memory=R total=T free=F used=U              (bytes)
 *   gpu=I memory_v2=R total=T reserved=S free=F used=U
 *   gpu=I utilization=R gpu=G memory=M                (percent)
 *   gpu=I processes=R count=C
 *   gpu=I process pid=P used=U                        (one per process)
 *   nvmlShutdown=R
 *
 * A value that failed is printed as "-". A missing entry point prints
 * "NAME=missing". The exit status is 0 whatever NVML returns: the test
 * reads the numbers.
 *
 *   nvmlprobe [LIBRARY]             (default libnvidia-ml.so.1)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef void *nvml_device;

/* nvmlPciInfo_t (the v3 layout, what nvmlDeviceGetPciInfo_v3 fills). */
struct nvml_pci {
	char bus_id_legacy[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

/* nvmlMemory_t and nvmlMemory_v2_t. */
struct nvml_memory {
	unsigned long long total, free, used;
};

struct nvml_memory_v2 {
	unsigned int version;
	unsigned long long total, reserved, free, used;
};

/* nvmlUtilization_t. */
struct nvml_utilization {
	unsigned int gpu, memory;
};

/* nvmlProcessInfo_t (v2 and v3 are the same layout). */
struct nvml_process {
	unsigned int pid;
	unsigned long long used_gpu_memory;
	unsigned int gpu_instance_id, compute_instance_id;
};

#define MAX_PROCESSES 64

static void *lib;

/* The entry point NAME of the library, or NULL after a "NAME=missing". */
static void *sym(const char *name, const char *prefix)
{
	void *f = dlsym(lib, name);

	if (!f)
		printf("%s%s=missing\n", prefix, name);
	return f;
}

static void probe_memory(unsigned int i, nvml_device dev)
{
	int (*get)(nvml_device, struct nvml_memory *);
	int (*get2)(nvml_device, struct nvml_memory_v2 *);
	struct nvml_memory m;
	struct nvml_memory_v2 m2;
	char prefix[32];
	int r;

	snprintf(prefix, sizeof(prefix), "gpu=%u ", i);
	get = (int (*)(nvml_device, struct nvml_memory *))sym("nvmlDeviceGetMemoryInfo", prefix);
	if (get) {
		memset(&m, 0, sizeof(m));
		r = get(dev, &m);
		printf("gpu=%u memory=%d total=%llu free=%llu used=%llu\n", i, r, m.total, m.free, m.used);
	}
	get2 = (int (*)(nvml_device, struct nvml_memory_v2 *))sym("nvmlDeviceGetMemoryInfo_v2", prefix);
	if (get2) {
		memset(&m2, 0, sizeof(m2));
		/* NVML_STRUCT_VERSION(Memory, 2): the size, and 2 << 24. */
		m2.version = (unsigned int)sizeof(m2) | (2u << 24);
		r = get2(dev, &m2);
		printf("gpu=%u memory_v2=%d total=%llu reserved=%llu free=%llu used=%llu\n", i, r,
		       m2.total, m2.reserved, m2.free, m2.used);
	}
}

static void probe_processes(unsigned int i, nvml_device dev)
{
	int (*get)(nvml_device, unsigned int *, struct nvml_process *);
	struct nvml_process p[MAX_PROCESSES];
	unsigned int n = MAX_PROCESSES, k;
	char prefix[32];
	int r;

	snprintf(prefix, sizeof(prefix), "gpu=%u ", i);
	get = (int (*)(nvml_device, unsigned int *, struct nvml_process *))
		sym("nvmlDeviceGetComputeRunningProcesses_v3", prefix);
	if (!get)
		return;
	memset(p, 0, sizeof(p));
	r = get(dev, &n, p);
	printf("gpu=%u processes=%d count=%u\n", i, r, n);
	for (k = 0; r == 0 && k < n && k < MAX_PROCESSES; k++)
		printf("gpu=%u process pid=%u used=%llu\n", i, p[k].pid, p[k].used_gpu_memory);
}

static void probe_device(unsigned int i)
{
	int (*handle)(unsigned int, nvml_device *);
	int (*text)(nvml_device, char *, unsigned int);
	int (*pci)(nvml_device, struct nvml_pci *);
	int (*util)(nvml_device, struct nvml_utilization *);
	struct nvml_pci pi;
	struct nvml_utilization u;
	nvml_device dev = NULL;
	char buf[96], prefix[32];
	int r;

	snprintf(prefix, sizeof(prefix), "gpu=%u ", i);
	handle = (int (*)(unsigned int, nvml_device *))sym("nvmlDeviceGetHandleByIndex_v2", prefix);
	if (!handle)
		return;
	r = handle(i, &dev);
	printf("gpu=%u handle=%d\n", i, r);
	if (r)
		return;
	text = (int (*)(nvml_device, char *, unsigned int))sym("nvmlDeviceGetName", prefix);
	if (text) {
		buf[0] = 0;
		r = text(dev, buf, sizeof(buf));
		printf("gpu=%u name=%d value=%s\n", i, r, r ? "-" : buf);
	}
	text = (int (*)(nvml_device, char *, unsigned int))sym("nvmlDeviceGetUUID", prefix);
	if (text) {
		buf[0] = 0;
		r = text(dev, buf, sizeof(buf));
		printf("gpu=%u uuid=%d value=%s\n", i, r, r ? "-" : buf);
	}
	pci = (int (*)(nvml_device, struct nvml_pci *))sym("nvmlDeviceGetPciInfo_v3", prefix);
	if (pci) {
		memset(&pi, 0, sizeof(pi));
		r = pci(dev, &pi);
		printf("gpu=%u pci=%d busId=%s domain=%u bus=%u device=%u pciDeviceId=0x%08x\n", i, r,
		       r ? "-" : pi.bus_id, pi.domain, pi.bus, pi.device, pi.pci_device_id);
	}
	probe_memory(i, dev);
	util = (int (*)(nvml_device, struct nvml_utilization *))sym("nvmlDeviceGetUtilizationRates", prefix);
	if (util) {
		memset(&u, 0, sizeof(u));
		r = util(dev, &u);
		printf("gpu=%u utilization=%d gpu=%u memory=%u\n", i, r, u.gpu, u.memory);
	}
	probe_processes(i, dev);
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "libnvidia-ml.so.1";
	int (*init)(void), (*shutdown)(void);
	int (*count)(unsigned int *);
	unsigned int n = 0, i;
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		printf("dlopen=error %s\n", dlerror());
		return 2;
	}
	printf("dlopen=ok\n");
	init = (int (*)(void))sym("nvmlInit_v2", "");
	if (!init)
		return 0;
	r = init();
	printf("nvmlInit_v2=%d\n", r);
	if (r)
		return 0;
	count = (int (*)(unsigned int *))sym("nvmlDeviceGetCount_v2", "");
	if (count) {
		r = count(&n);
		printf("nvmlDeviceGetCount_v2=%d count=%u\n", r, r ? 0 : n);
		for (i = 0; r == 0 && i < n; i++)
			probe_device(i);
	}
	shutdown = (int (*)(void))sym("nvmlShutdown", "");
	if (shutdown)
		printf("nvmlShutdown=%d\n", shutdown());
	return 0;
}
