// SPDX-License-Identifier: GPL-2.0
/*
 * nvtrace.so: an LD_PRELOAD tracer of the ioctls a program makes on the
 * NVIDIA driver's nodes (/dev/nvidia*) and on vgpu's (/dev/vgpu*).
 *
 *   NVTRACE_LOG=/tmp/t LD_PRELOAD=/bin/nvtrace.so nvidia-smi
 *
 * It wraps libc's ioctl() (the real one from dlsym(RTLD_NEXT)); for an fd
 * whose /proc/self/fd link names one of those nodes it writes one line per
 * call, after the call, to the file NVTRACE_LOG names (opened O_APPEND for
 * each line and written with one write(), so lines of several processes
 * and threads do not interleave), or to stderr when NVTRACE_LOG is unset.
 * Calls on other fds are not logged. errno is what the driver left.
 *
 * Line format (space-separated, fixed order, values in C notation; the
 * struct layouts are those of src/nv/abi.rs and src/nv/uvm.rs;
 * no NVIDIA header is used):
 *
 *   nvtrace pid=PID PATH NAME nr=0xNN size=N ret=R errno=E [FIELD=VALUE...]
 *
 *   PATH  the node, e.g. /dev/nvidiactl, /dev/nvidia0, /dev/nvidia-uvm,
 *         /dev/vgpuctl (what the fd link reads; "(deleted)" stripped).
 *   NAME  the escape: for the RM nodes the name of _IOC_NR(request)
 *         (CONTROL, ALLOC, FREE, CARD_INFO, CHECK_VERSION_STR, ...; ESC
 *         when unknown); nr and size are _IOC_NR and _IOC_SIZE.
 *         For the UVM nodes (/dev/nvidia-uvm*, /dev/vgpu-uvm*), whose
 *         requests are plain numbers, NAME is the UVM command (INITIALIZE,
 *         MM_INITIALIZE, ... ; UVM when unknown) and "nr=" is the whole
 *         request in hex, "size=" the block size we know (0 if unknown).
 *   ret, errno: ioctl's return and errno (errno=0 when ret is 0).
 *
 * Decoded fields, read from the block after the call (so "status" is RM's
 * answer; handles and classes are what RM left in the block):
 *   ALLOC    nvos=21|64 hRoot= hParent= hObjectNew= hClass= paramsSize=
 *            status= in.hObjectNew= in.hClass= in.hRoot= (the values
 *            before the call) pParams=0|1 (whether the params pointer is
 *            set), and for nvos=64 flags= pRights=0|1
 *   CONTROL  hClient= hObject= cmd=0x%08x flags= paramsSize= status=
 *            pParams=0|1
 *   FREE     hRoot= hParent= hObjectOld= status=
 *   DUP_OBJECT hClient= hParent= hObject= hClientSrc= hObjectSrc= flags=
 *            status=
 *   ALLOC_MEMORY hRoot= hParent= hObjectNew= hClass= flags= limit= status=
 *            fd=
 *   MAP_MEMORY hClient= hDevice= hMemory= length= flags= status= fd=
 *   UNMAP_MEMORY hClient= hDevice= hMemory= status=
 *   VID_HEAP_CONTROL hRoot= hParent= function= status=
 *   CHECK_VERSION_STR cmd=0x.. reply=N version="..." (the string sent)
 *   CARD_INFO records=N valid=K, then per valid record
 *            card<i>=<domain>:<bus>:<slot>.<fn>,id=0x<device>,minor=<m>
 *   REGISTER_FD ctl_fd=  ALLOC_OS_EVENT/FREE_OS_EVENT hClient= hDevice=
 *            fd= status=  WAIT_OPEN_COMPLETE rc= adapterStatus=
 *   XFER     the wrapped command: NAME is XFER>INNER (e.g. XFER>CONTROL),
 *            "inner=0xNN inner_size=N" precede the inner command's fields.
 *   UVM      status=0x.. status_off=N (the block's rmStatus and its
 *            offset) for the commands whose block layout is the same in
 *            535-595; none for the others.
 * Every line ends with "nodefd=FD", the fd the call was made on. With
 * NVTRACE_PARAMS=1 set, "in=..." follows it: the bytes the driver was
 * given, read before the call: the alloc params (ALLOC) or the control's
 * params (CONTROL), the block itself for every other escape (the inner
 * block for XFER) and for the UVM commands of known size: those whose
 * layout is the same in 535-595, and with NVTRACE_RELEASE set to the
 * release (535.x, 550.x) those whose layout is that release's.
 * An NVOS64 alloc with paramsSize 0 and a params pointer (RM then reads
 * the class's own size) gets "peek=N in=...": the first N bytes there
 * (PEEK, or fewer where the memory ends), which traces.rs cuts to the
 * class's size in the release.
 * They are written sparse, as the runs of non-zero 32-bit words,
 * "OFF:HEX[,OFF:HEX...]" (OFF decimal, HEX the bytes in memory order),
 * "-" when every byte is zero, "?" when the line has no room for them.
 * selftests/vmtest/src/traces.rs turns these lines into the replayable
 * traces of selftests/traces/.
 * Status values are RM's NV_STATUS in hex (0x56 NV_ERR_NOT_SUPPORTED, ...).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

/* The layouts (x86_64, byte offsets), as src/nv/abi.rs declares them. */
struct nvos00 {			/* RM_FREE, 16 */
	uint32_t hRoot, hObjectParent, hObjectOld, status;
};
struct nvos21 {			/* RM_ALLOC, 32 (status at 28 since 535) */
	uint32_t hRoot, hObjectParent, hObjectNew, hClass;
	uint64_t pAllocParms;
	uint32_t paramsSize, status;
};
struct nvos64 {			/* RM_ALLOC, 48 (since 535) */
	uint32_t hRoot, hObjectParent, hObjectNew, hClass;
	uint64_t pAllocParms, pRightsRequested;
	uint32_t paramsSize, flags, status, pad;
};
struct nvos54 {			/* RM_CONTROL, 32 */
	uint32_t hClient, hObject, cmd, flags;
	uint64_t params;
	uint32_t paramsSize, status;
};
struct nvos55 {			/* RM_DUP_OBJECT, 28 */
	uint32_t hClient, hParent, hObject, hClientSrc, hObjectSrc, flags,
		status;
};
struct nvos02_fd {		/* RM_ALLOC_MEMORY, 56 */
	uint32_t hRoot, hObjectParent, hObjectNew, hClass, flags, pad;
	uint64_t pMemory, limit;
	uint32_t status, pad2;
	int32_t fd, pad3;
};
struct nvos33_fd {		/* RM_MAP_MEMORY, 56 */
	uint32_t hClient, hDevice, hMemory, pad;
	uint64_t offset, length, pLinearAddress;
	uint32_t status, flags;
	int32_t fd, pad2;
};
struct nvos34 {			/* RM_UNMAP_MEMORY, 32 */
	uint32_t hClient, hDevice, hMemory, pad;
	uint64_t pLinearAddress;
	uint32_t status, flags;
};
struct nvos32_head {		/* RM_VID_HEAP_CONTROL, 184: its head */
	uint32_t hRoot, hObjectParent, function, hVASpace;
	int16_t ivcHeapNumber, pad;
	uint32_t status;
};
struct check_version {		/* CHECK_VERSION_STR, 72 */
	uint32_t cmd, reply;
	char version[64];
};
struct card_info {		/* CARD_INFO record, 72 */
	uint8_t valid, pad[3];
	uint32_t domain;
	uint8_t bus, slot, function, pad2;
	uint16_t vendor_id, device_id;
	uint32_t gpu_id;
	uint16_t interrupt_line, pad3;
	uint64_t reg_address, reg_size, fb_address, fb_size;
	uint32_t minor_number;
	char dev_name[10];
	uint8_t pad4[2];
};
struct os_event {		/* ALLOC_OS_EVENT / FREE_OS_EVENT, 16 */
	uint32_t hClient, hDevice;
	int32_t fd;
	uint32_t status;
};
struct xfer {			/* IOCTL_XFER_CMD, 16 */
	uint32_t cmd, size;
	uint64_t ptr;
};

_Static_assert(sizeof(struct nvos00) == 16, "NVOS00");
_Static_assert(sizeof(struct nvos21) == 32, "NVOS21");
_Static_assert(sizeof(struct nvos64) == 48, "NVOS64");
_Static_assert(sizeof(struct nvos54) == 32, "NVOS54");
_Static_assert(sizeof(struct nvos55) == 28, "NVOS55");
_Static_assert(sizeof(struct nvos02_fd) == 56, "NVOS02 with fd");
_Static_assert(sizeof(struct nvos33_fd) == 56, "NVOS33 with fd");
_Static_assert(sizeof(struct nvos34) == 32, "NVOS34");
_Static_assert(sizeof(struct check_version) == 72, "CHECK_VERSION_STR");
_Static_assert(sizeof(struct card_info) == 72, "CARD_INFO");
_Static_assert(sizeof(struct os_event) == 16, "OS_EVENT");
_Static_assert(sizeof(struct xfer) == 16, "XFER");
_Static_assert(offsetof(struct nvos64, status) == 40, "NVOS64.status");
_Static_assert(offsetof(struct nvos02_fd, limit) == 32 &&
	       offsetof(struct nvos02_fd, status) == 40 &&
	       offsetof(struct nvos02_fd, fd) == 48, "NVOS02");
_Static_assert(offsetof(struct nvos33_fd, status) == 40 &&
	       offsetof(struct nvos33_fd, flags) == 44 &&
	       offsetof(struct nvos33_fd, fd) == 48, "NVOS33");
_Static_assert(offsetof(struct nvos34, status) == 24, "NVOS34.status");
_Static_assert(offsetof(struct nvos32_head, status) == 20, "NVOS32.status");
_Static_assert(offsetof(struct card_info, device_id) == 14 &&
	       offsetof(struct card_info, gpu_id) == 16 &&
	       offsetof(struct card_info, reg_address) == 24 &&
	       offsetof(struct card_info, minor_number) == 56 &&
	       offsetof(struct card_info, dev_name) == 60, "CARD_INFO fields");

static const struct {
	unsigned nr;
	const char *name;
} escapes[] = {
	{ 0x27, "ALLOC_MEMORY" }, { 0x28, "ALLOC_OBJECT" }, { 0x29, "FREE" },
	{ 0x2a, "CONTROL" }, { 0x2b, "ALLOC" }, { 0x32, "CONFIG_GET" },
	{ 0x33, "CONFIG_SET" }, { 0x34, "DUP_OBJECT" }, { 0x35, "SHARE" },
	{ 0x37, "CONFIG_GET_EX" }, { 0x38, "CONFIG_SET_EX" },
	{ 0x39, "I2C_ACCESS" }, { 0x41, "IDLE_CHANNELS" },
	{ 0x4a, "VID_HEAP_CONTROL" }, { 0x4d, "ACCESS_REGISTRY" },
	{ 0x4e, "MAP_MEMORY" }, { 0x4f, "UNMAP_MEMORY" },
	{ 0x52, "GET_EVENT_DATA" }, { 0x54, "ALLOC_CONTEXT_DMA2" },
	{ 0x56, "ADD_VBLANK_CALLBACK" }, { 0x57, "MAP_MEMORY_DMA" },
	{ 0x58, "UNMAP_MEMORY_DMA" }, { 0x59, "BIND_CONTEXT_DMA" },
	{ 0x5c, "EXPORT_OBJECT_TO_FD" }, { 0x5d, "IMPORT_OBJECT_FROM_FD" },
	{ 0x5e, "UPDATE_DEVICE_MAPPING_INFO" },
	{ 0x5f, "LOCKLESS_DIAGNOSTIC" },
	{ 0xc8, "CARD_INFO" }, { 0xc9, "REGISTER_FD" },
	{ 0xca, "ENV_INFO" },	/* NV_IOCTL_BASE + 2 in older headers */
	{ 0xce, "ALLOC_OS_EVENT" }, { 0xcf, "FREE_OS_EVENT" },
	{ 0xd1, "STATUS_CODE" }, { 0xd2, "CHECK_VERSION_STR" },
	{ 0xd3, "XFER" }, { 0xd4, "ATTACH_GPUS_TO_FD" },
	{ 0xd5, "QUERY_DEVICE_INTR" }, { 0xd6, "SYS_PARAMS" },
	{ 0xd7, "NUMA_INFO" }, { 0xd8, "SET_NUMA_STATUS" },
	{ 0xd9, "EXPORT_TO_DMABUF_FD" }, { 0xda, "WAIT_OPEN_COMPLETE" },
};

/*
 * UVM commands (uvm_ioctl.h numbers, as src/nv/uvm.rs has them): the
 * block size and rmStatus offset where the layout is the same from 535 to
 * 595 (size 0: not decoded).
 */
static const struct {
	unsigned long cmd;
	const char *name;
	unsigned size, status;
} uvm_cmds[] = {
	{ 0x30000001, "INITIALIZE", 16, 8 },
	{ 0x30000002, "DEINITIALIZE", 0, 0 },
	{ 23, "CREATE_RANGE_GROUP", 16, 8 },
	{ 24, "DESTROY_RANGE_GROUP", 16, 8 },
	{ 25, "REGISTER_GPU_VASPACE", 32, 28 },
	{ 26, "UNREGISTER_GPU_VASPACE", 20, 16 },
	{ 27, "REGISTER_CHANNEL", 56, 48 },
	{ 28, "UNREGISTER_CHANNEL", 0, 0 },
	{ 29, "ENABLE_PEER_ACCESS", 36, 32 },
	{ 30, "DISABLE_PEER_ACCESS", 36, 32 },
	{ 31, "SET_RANGE_GROUP", 32, 24 },
	{ 33, "MAP_EXTERNAL_ALLOCATION", 0, 0 },
	{ 34, "FREE", 0, 0 },
	{ 37, "REGISTER_GPU", 40, 36 },
	{ 38, "UNREGISTER_GPU", 20, 16 },
	{ 39, "PAGEABLE_MEM_ACCESS", 8, 4 },
	{ 42, "SET_PREFERRED_LOCATION", 0, 0 },
	{ 43, "UNSET_PREFERRED_LOCATION", 24, 16 },
	{ 44, "ENABLE_READ_DUPLICATION", 24, 16 },
	{ 45, "DISABLE_READ_DUPLICATION", 24, 16 },
	{ 46, "SET_ACCESSED_BY", 40, 32 },
	{ 47, "UNSET_ACCESSED_BY", 40, 32 },
	{ 51, "MIGRATE", 80, 72 },
	{ 53, "MIGRATE_RANGE_GROUP", 32, 24 },
	{ 62, "TOOLS_READ_PROCESS_MEMORY", 40, 32 },
	{ 63, "TOOLS_WRITE_PROCESS_MEMORY", 40, 32 },
	{ 65, "MAP_DYNAMIC_PARALLELISM_REGION", 40, 32 },
	{ 66, "UNMAP_EXTERNAL", 40, 32 },
	{ 68, "ALLOC_SEMAPHORE_POOL", 0, 0 },
	{ 70, "PAGEABLE_MEM_ACCESS_ON_GPU", 24, 20 },
	{ 72, "VALIDATE_VA_RANGE", 24, 16 },
	{ 73, "CREATE_EXTERNAL_RANGE", 24, 16 },
	{ 75, "MM_INITIALIZE", 8, 4 },
};

/*
 * The UVM commands whose layout differs between releases, as each release
 * before 590 has it (src/nv/uvm.rs and src/nv/uvm/r535.rs, r580.rs): used
 * when NVTRACE_RELEASE names a release starting so ("535.", "550." ...).
 */
static const struct {
	unsigned long cmd;
	const char *release;
	unsigned size, status;
} uvm_by_release[] = {
	{ 28, "535.", 28, 24 },	  { 28, "550.", 28, 24 },
	{ 33, "535.", 1200, 1196 }, { 33, "550.", 9264, 9260 },
	{ 34, "535.", 24, 16 },	  { 34, "550.", 24, 16 },
	{ 42, "535.", 40, 32 },	  { 42, "550.", 40, 36 },
	{ 68, "535.", 1184, 1176 }, { 68, "550.", 9248, 9240 },
};

/*
 * UVM command `request`: its name, block size and rmStatus offset (size
 * 0: not decoded), from NVTRACE_RELEASE's layout where it has one.
 */
static const char *uvm_cmd(unsigned long request, unsigned *size,
			   unsigned *status)
{
	const char *name = "UVM", *rel = getenv("NVTRACE_RELEASE");

	*size = 0;
	*status = 0;
	for (size_t i = 0; i < sizeof(uvm_cmds) / sizeof(uvm_cmds[0]); i++)
		if (uvm_cmds[i].cmd == request) {
			name = uvm_cmds[i].name;
			*size = uvm_cmds[i].size;
			*status = uvm_cmds[i].status;
		}
	for (size_t i = 0; rel && i < sizeof(uvm_by_release) /
					      sizeof(uvm_by_release[0]);
	     i++)
		if (uvm_by_release[i].cmd == request &&
		    !strncmp(rel, uvm_by_release[i].release,
			     strlen(uvm_by_release[i].release))) {
			*size = uvm_by_release[i].size;
			*status = uvm_by_release[i].status;
		}
	return name;
}

typedef int (*ioctl_fn)(int, unsigned long, ...);

/* A line under construction: appends never run past the buffer. */
struct line {
	char buf[32768];
	size_t len;
};

static void add(struct line *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->len >= sizeof(l->buf) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, sizeof(l->buf) - 1 - l->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len += (size_t)n < sizeof(l->buf) - 1 - l->len ?
			(size_t)n : sizeof(l->buf) - 2 - l->len;
}

/*
 * Appends " in=..." for the n bytes at p (see the header): the runs of
 * non-zero 32-bit words, or "-", or "?" when they do not fit.
 */
static void add_sparse(struct line *l, const unsigned char *p, size_t n)
{
	size_t start = l->len, w, runs = 0;

	add(l, " in=");
	if (!p) {
		add(l, "-");
		return;
	}
	for (w = 0; w < n; w += 4) {
		size_t end = w + 4 < n ? w + 4 : n, k;
		int nz = 0;

		for (k = w; k < end; k++)
			nz |= p[k] != 0;
		if (!nz)
			continue;
		/* A new run where the previous word was zero. */
		if (w == 0 || !(p[w - 4] | p[w - 3] | p[w - 2] | p[w - 1]))
			add(l, "%s%zu:", runs++ ? "," : "", w);
		for (k = w; k < end; k++)
			add(l, "%02x", p[k]);
	}
	if (!runs)
		add(l, "-");
	if (l->len >= sizeof(l->buf) - 2) {
		l->len = start;
		add(l, " in=?");
	}
}

static void emit(struct line *l)
{
	const char *path = getenv("NVTRACE_LOG");
	int fd = 2;

	l->buf[l->len++] = '\n';
	if (path && *path) {
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return;
	}
	if (write(fd, l->buf, l->len) < 0) {
		/* Nothing to do: a tracer must not disturb the program. */
	}
	if (fd != 2)
		close(fd);
}

static const char *escape_name(unsigned nr)
{
	for (size_t i = 0; i < sizeof(escapes) / sizeof(escapes[0]); i++)
		if (escapes[i].nr == nr)
			return escapes[i].name;
	return "ESC";
}

/* What the fd is: 0 not traced, 1 an RM node, 2 a UVM node. */
static int classify(int fd, char *path, size_t len)
{
	char link[64];
	ssize_t n;
	char *del;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, len - 1);
	if (n <= 0)
		return 0;
	path[n] = 0;
	del = strstr(path, " (deleted)");
	if (del)
		*del = 0;
	if (strncmp(path, "/dev/nvidia-uvm", 15) == 0 ||
	    strncmp(path, "/dev/vgpu-uvm", 13) == 0)
		return 2;
	if (strncmp(path, "/dev/nvidia", 11) == 0 ||
	    strncmp(path, "/dev/vgpu", 9) == 0)
		return 1;
	return 0;
}

/*
 * The fields of RM escape nr with block p (size bytes), after the call;
 * before is a copy of the block's first bytes from before the call.
 */
static void decode_rm(struct line *l, unsigned nr, unsigned size,
		      const void *p, const unsigned char *before)
{
	if (!p)
		return;
	switch (nr) {
	case 0x2b:
		if (size == sizeof(struct nvos21)) {
			const struct nvos21 *a = p;
			const struct nvos21 *b = (const void *)before;

			add(l, " nvos=21 hRoot=0x%08x hParent=0x%08x hObjectNew=0x%08x hClass=0x%04x paramsSize=%u status=0x%x in.hObjectNew=0x%08x in.hClass=0x%04x in.hRoot=0x%08x pParams=%d",
			    a->hRoot, a->hObjectParent, a->hObjectNew, a->hClass,
			    a->paramsSize, a->status, b->hObjectNew, b->hClass,
			    b->hRoot, a->pAllocParms != 0);
		} else if (size == sizeof(struct nvos64)) {
			const struct nvos64 *a = p;
			const struct nvos64 *b = (const void *)before;

			add(l, " nvos=64 hRoot=0x%08x hParent=0x%08x hObjectNew=0x%08x hClass=0x%04x paramsSize=%u status=0x%x in.hObjectNew=0x%08x in.hClass=0x%04x in.hRoot=0x%08x pParams=%d flags=0x%x pRights=%d",
			    a->hRoot, a->hObjectParent, a->hObjectNew, a->hClass,
			    a->paramsSize, a->status, b->hObjectNew, b->hClass,
			    b->hRoot, a->pAllocParms != 0, a->flags,
			    a->pRightsRequested != 0);
		}
		break;
	case 0x2a:
		if (size == sizeof(struct nvos54)) {
			const struct nvos54 *a = p;

			add(l, " hClient=0x%08x hObject=0x%08x cmd=0x%08x flags=0x%x paramsSize=%u status=0x%x pParams=%d",
			    a->hClient, a->hObject, a->cmd, a->flags,
			    a->paramsSize, a->status, a->params != 0);
		}
		break;
	case 0x29:
		if (size == sizeof(struct nvos00)) {
			const struct nvos00 *a = p;

			add(l, " hRoot=0x%08x hParent=0x%08x hObjectOld=0x%08x status=0x%x",
			    a->hRoot, a->hObjectParent, a->hObjectOld,
			    a->status);
		}
		break;
	case 0x34:
		if (size == sizeof(struct nvos55)) {
			const struct nvos55 *a = p;

			add(l, " hClient=0x%08x hParent=0x%08x hObject=0x%08x hClientSrc=0x%08x hObjectSrc=0x%08x flags=0x%x status=0x%x",
			    a->hClient, a->hParent, a->hObject, a->hClientSrc,
			    a->hObjectSrc, a->flags, a->status);
		}
		break;
	case 0x27:
		if (size == sizeof(struct nvos02_fd)) {
			const struct nvos02_fd *a = p;

			add(l, " hRoot=0x%08x hParent=0x%08x hObjectNew=0x%08x hClass=0x%04x flags=0x%x limit=0x%llx status=0x%x fd=%d",
			    a->hRoot, a->hObjectParent, a->hObjectNew, a->hClass,
			    a->flags, (unsigned long long)a->limit, a->status,
			    a->fd);
		}
		break;
	case 0x4e:
		if (size == sizeof(struct nvos33_fd)) {
			const struct nvos33_fd *a = p;

			add(l, " hClient=0x%08x hDevice=0x%08x hMemory=0x%08x length=0x%llx flags=0x%x status=0x%x fd=%d",
			    a->hClient, a->hDevice, a->hMemory,
			    (unsigned long long)a->length, a->flags, a->status,
			    a->fd);
		}
		break;
	case 0x4f:
		if (size == sizeof(struct nvos34)) {
			const struct nvos34 *a = p;

			add(l, " hClient=0x%08x hDevice=0x%08x hMemory=0x%08x status=0x%x",
			    a->hClient, a->hDevice, a->hMemory, a->status);
		}
		break;
	case 0x4a:
		if (size == 184) {
			const struct nvos32_head *a = p;

			add(l, " hRoot=0x%08x hParent=0x%08x function=%u status=0x%x",
			    a->hRoot, a->hObjectParent, a->function,
			    a->status);
		}
		break;
	case 0xd2:
		if (size == sizeof(struct check_version)) {
			const struct check_version *a = p;
			const struct check_version *b = (const void *)before;

			add(l, " cmd=0x%x reply=%u version=\"%.*s\"", a->cmd,
			    a->reply, (int)strnlen(b->version, sizeof(b->version)),
			    b->version);
		}
		break;
	case 0xc8:
		if (size && size % sizeof(struct card_info) == 0) {
			const struct card_info *c = p;
			unsigned n = size / sizeof(struct card_info), valid = 0;

			for (unsigned i = 0; i < n; i++)
				valid += c[i].valid != 0;
			add(l, " records=%u valid=%u", n, valid);
			for (unsigned i = 0; i < n; i++)
				if (c[i].valid)
					add(l, " card%u=%04x:%02x:%02x.%x,id=0x%04x,minor=%u",
					    i, c[i].domain, c[i].bus, c[i].slot,
					    c[i].function, c[i].device_id,
					    c[i].minor_number);
		}
		break;
	case 0xc9:
		if (size == 4)
			add(l, " ctl_fd=%d", *(const int32_t *)p);
		break;
	case 0xce:
	case 0xcf:
		if (size == sizeof(struct os_event)) {
			const struct os_event *a = p;

			add(l, " hClient=0x%08x hDevice=0x%08x fd=%d status=0x%x",
			    a->hClient, a->hDevice, a->fd, a->status);
		}
		break;
	case 0xda:
		if (size == 8)
			add(l, " rc=%d adapterStatus=0x%x",
			    ((const int32_t *)p)[0], ((const uint32_t *)p)[1]);
		break;
	case 0xd4:
		if (size % 4 == 0)
			add(l, " gpus=%u", size / 4);
		break;
	case 0xd6:
		if (size == 8)
			add(l, " memblock_size=0x%llx",
			    (unsigned long long)*(const uint64_t *)p);
		break;
	}
}

/*
 * The bytes the driver is given by call (kind, request, arg), before the
 * call, into in (see the header).
 */
/* The most an NVOS64 alloc's params of size 0 are read (see the header). */
#define PEEK 512

/*
 * Copies up to PEEK bytes at address p of this process into buf, without
 * faulting where the memory ends: process_vm_readv, the part in p's page
 * and the rest as two pieces, stops at the first piece it cannot read.
 * Returns the bytes copied.
 */
static size_t peek(unsigned char *buf, uint64_t p)
{
	size_t first = 4096 - (p & 4095);
	struct iovec local = { buf, PEEK };
	struct iovec remote[2] = {
		{ (void *)(uintptr_t)p, first < PEEK ? first : PEEK },
		{ (void *)(uintptr_t)(p + first), first < PEEK ? PEEK - first : 0 },
	};
	ssize_t n = process_vm_readv(getpid(), &local, 1, remote,
				     remote[1].iov_len ? 2 : 1, 0);

	return n > 0 ? (size_t)n : 0;
}

static void record_inputs(struct line *in, int kind, unsigned long request,
			  const void *arg)
{
	unsigned nr = _IOC_NR(request), size = _IOC_SIZE(request);

	if (kind == 2) {
		unsigned block, status;

		uvm_cmd(request, &block, &status);
		if (block)
			add_sparse(in, arg, block);
		return;
	}
	if (nr == 0xd3 && size == sizeof(struct xfer)) {
		const struct xfer *x = arg;

		nr = x->cmd;
		size = x->size;
		arg = (const void *)(uintptr_t)x->ptr;
	}
	if (!arg)
		return;
	if (nr == 0x2b && size == sizeof(struct nvos21)) {
		const struct nvos21 *a = arg;

		add_sparse(in, (const void *)(uintptr_t)a->pAllocParms,
			   a->paramsSize);
	} else if (nr == 0x2b && size == sizeof(struct nvos64)) {
		const struct nvos64 *a = arg;

		if (a->paramsSize == 0 && a->pAllocParms) {
			unsigned char buf[PEEK];
			size_t n = peek(buf, a->pAllocParms);

			add(in, " peek=%zu", n);
			add_sparse(in, buf, n);
		} else {
			add_sparse(in, (const void *)(uintptr_t)a->pAllocParms,
				   a->paramsSize);
		}
	} else if (nr == 0x2a && size == sizeof(struct nvos54)) {
		const struct nvos54 *a = arg;

		add_sparse(in, (const void *)(uintptr_t)a->params,
			   a->paramsSize);
	} else if (nr != 0x29) {
		add_sparse(in, arg, size);
	}
}

int ioctl(int fd, unsigned long request, ...)
{
	static ioctl_fn real;
	struct line *in;
	unsigned char before[72];
	char path[256];
	struct line *l;
	void *arg;
	va_list ap;
	int kind, ret, err, saved, inputs;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!real) {
		real = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
		if (!real) {
			errno = ENOSYS;
			return -1;
		}
	}

	memset(before, 0, sizeof(before));
	kind = classify(fd, path, sizeof(path));
	if (!kind)
		return real(fd, request, arg);
	l = malloc(sizeof(*l));
	in = malloc(sizeof(*in));
	if (!l || !in) {
		free(l);
		free(in);
		return real(fd, request, arg);
	}
	inputs = getenv("NVTRACE_PARAMS") && arg;
	in->len = 0;
	if (inputs)
		record_inputs(in, kind, request, arg);

	if (kind == 1 && arg) {
		unsigned size = _IOC_SIZE(request);
		unsigned char *src = arg;

		/* What the escape's block held before the call, for the
		 * fields RM overwrites (XFER: the inner block). */
		if (_IOC_NR(request) == 0xd3 && size == sizeof(struct xfer)) {
			const struct xfer *x = arg;

			src = (unsigned char *)(uintptr_t)x->ptr;
			size = x->size;
		}
		if (src)
			memcpy(before, src, size < sizeof(before) ?
			       size : sizeof(before));
	}

	ret = real(fd, request, arg);
	saved = errno;
	err = ret < 0 ? saved : 0;

	l->len = 0;
	if (kind == 2) {
		unsigned size, status;
		const char *name = uvm_cmd(request, &size, &status);

		add(l, "nvtrace pid=%d %s %s nr=0x%lx size=%u ret=%d errno=%d",
		    (int)getpid(), path, name, request, size, ret, err);
		if (size && arg)
			add(l, " status=0x%x status_off=%u",
			    *(const uint32_t *)((const char *)arg + status),
			    status);
	} else {
		unsigned nr = _IOC_NR(request), size = _IOC_SIZE(request);

		if (nr == 0xd3 && size == sizeof(struct xfer) && arg) {
			const struct xfer *x = arg;

			add(l, "nvtrace pid=%d %s XFER>%s nr=0x%02x size=%u ret=%d errno=%d inner=0x%02x inner_size=%u",
			    (int)getpid(), path, escape_name(x->cmd), nr, size,
			    ret, err, x->cmd, x->size);
			decode_rm(l, x->cmd, x->size,
				  (const void *)(uintptr_t)x->ptr, before);
		} else {
			add(l, "nvtrace pid=%d %s %s nr=0x%02x size=%u ret=%d errno=%d",
			    (int)getpid(), path, escape_name(nr), nr, size, ret,
			    err);
			decode_rm(l, nr, size, arg, before);
		}
	}
	add(l, " nodefd=%d", fd);
	if (inputs)
		add(l, "%.*s", (int)in->len, in->buf);
	emit(l);
	free(l);
	free(in);
	errno = saved;
	return ret;
}
