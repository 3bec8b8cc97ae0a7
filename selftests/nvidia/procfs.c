// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/driver/nvidia of the NVIDIA driver double. The real driver makes
 * this directory at load, with "params", "version", "registry", "gpus/"
 * and more (kernel-open/nvidia/nv-procfs.c, nv_procfs_init, 595.45.04;
 * the same in every branch vgpu supports). The double makes the two files
 * container tooling reads and each GPU's "information":
 *
 *  - params: one "Name: value" line per driver parameter
 *    (nv_procfs_read_params). libcuda and nvidia-smi read
 *    ModifyDeviceFiles here; CDI specs (the NVIDIA Container Toolkit's,
 *    vgpuctl's) bind a copy with "ModifyDeviceFiles: 0" over it, which
 *    needs the file to exist. Values: the defaults of nv-reg.h at
 *    595.45.04 (ModifyDeviceFiles 1, DeviceFileUID/GID 0, DeviceFileMode
 *    0666 = 438, ResmanDebugLevel ~0); the real file lists more
 *    parameters, which nothing here reads.
 *  - version: "NVRM version: ..." with the release the double claims
 *    (nv_procfs_read_version).
 *  - gpus/<bus location>/information, one directory per GPU, named
 *    "%04x:%02x:%02x.%1x" (domain, bus, slot, function) and made as the
 *    driver probes the GPU (nv_procfs_add_gpu, nv-procfs.c:1397-1468);
 *    the file's lines are nv_procfs_read_gpu_info's (nv-procfs.c:102-187),
 *    format and whitespace exactly, without its DEBUG-only BAR lines. The
 *    real directory also holds "registry" and "power", which the double
 *    does not make. The values are the caller's (nv_double_procfs_add_gpu:
 *    minor, location, model, UUID; procfs.rs passes the location CARD_INFO
 *    reports and the UUID GET_GID_INFO answers) or the double's choices:
 *      Model         the caller's; the real driver names the board from
 *                    its PCI ids (rm_get_device_name), the double passes
 *                    a name of its own (procfs.rs), not a product's.
 *      IRQ           0, as CARD_INFO's interrupt_line.
 *      Video BIOS    "??.??.??.??.??", the real driver's text for a VBIOS
 *                    version it has not read (nv_pci_probe, nv-pci.c:1893):
 *                    the double has no VBIOS.
 *      Bus Type      "PCIe", what the real driver prints for a device
 *                    with a PCI Express capability.
 *      DMA Size/Mask 47 bits, 0x7fffffffffff: a choice (the real mask is
 *                    what the driver set for the chip); Size is the bit
 *                    count of Mask, as nv_count_bits makes it.
 *      GPU Firmware  the release the double claims: a GSP firmware
 *                    reports the driver's own version (RmGetFirmwareVersion,
 *                    src/nvidia/arch/nvalloc/unix/src/osinit.c:532, copies
 *                    GSP_GET_FEATURES' firmwareVersion).
 *      GPU Excluded  "No" (no GPU is excluded by NVreg_ExcludedGpus).
 */
#include <linux/bitops.h>
#include <linux/dma-mapping.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include "procfs.h"

/* The double's DMA mask (see above). */
#define NV_DOUBLE_DMA_MASK DMA_BIT_MASK(47)

/* One GPU's directory and what its "information" file shows. A slot is in
 * use while `dir` is set; the file's data points at its slot, which is
 * cleared only after proc_remove has waited for the file's readers. */
struct nv_double_gpu {
	struct proc_dir_entry *dir;
	unsigned int minor;
	unsigned int domain;
	unsigned int bus;
	unsigned int slot;
	unsigned int function;
	char model[64];
	char uuid[48];
};

static struct proc_dir_entry *proc_nvidia;
static struct proc_dir_entry *proc_nvidia_gpus;
static char nv_double_release[32];
/* Indexed by minor. */
static struct nv_double_gpu nv_double_gpus[NV_DOUBLE_PROCFS_MAX_GPUS];

static int params_show(struct seq_file *s, void *v)
{
	seq_puts(s, "ResmanDebugLevel: 4294967295\n");
	seq_puts(s, "ModifyDeviceFiles: 1\n");
	seq_puts(s, "DeviceFileUID: 0\n");
	seq_puts(s, "DeviceFileGID: 0\n");
	seq_puts(s, "DeviceFileMode: 438\n");
	return 0;
}

static int version_show(struct seq_file *s, void *v)
{
	seq_printf(s, "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (vgpu driver double)\n",
		   nv_double_release);
	return 0;
}

/* nv_procfs_read_gpu_info's lines, in its order and its whitespace. */
static int information_show(struct seq_file *s, void *v)
{
	const struct nv_double_gpu *g = s->private;

	seq_printf(s, "Model: \t\t %s\n", g->model);
	seq_printf(s, "IRQ:   \t\t %d\n", 0);
	seq_printf(s, "GPU UUID: \t %s\n", g->uuid);
	seq_printf(s, "Video BIOS: \t %s\n", "??.??.??.??.??");
	seq_printf(s, "Bus Type: \t %s\n", "PCIe");
	seq_printf(s, "DMA Size: \t %d bits\n",
		   (int)hweight64(NV_DOUBLE_DMA_MASK));
	seq_printf(s, "DMA Mask: \t 0x%llx\n",
		   (unsigned long long)NV_DOUBLE_DMA_MASK);
	seq_printf(s, "Bus Location: \t %04x:%02x:%02x.%x\n", g->domain, g->bus,
		   g->slot, g->function);
	seq_printf(s, "Device Minor: \t %u\n", g->minor);
	seq_printf(s, "GPU Firmware: \t %s\n", nv_double_release);
	seq_printf(s, "GPU Excluded:\t %s\n", "No");
	return 0;
}

int nv_double_procfs_init(const char *release)
{
	strscpy(nv_double_release, release, sizeof(nv_double_release));
	proc_nvidia = proc_mkdir("driver/nvidia", NULL);
	if (!proc_nvidia)
		return -ENOMEM;
	if (!proc_create_single("params", 0444, proc_nvidia, params_show) ||
	    !proc_create_single("version", 0444, proc_nvidia, version_show))
		goto fail;
	proc_nvidia_gpus = proc_mkdir("gpus", proc_nvidia);
	if (!proc_nvidia_gpus)
		goto fail;
	return 0;
fail:
	proc_remove(proc_nvidia);
	proc_nvidia = NULL;
	return -ENOMEM;
}

int nv_double_procfs_add_gpu(unsigned int minor, unsigned int domain,
			     unsigned int bus, unsigned int slot,
			     unsigned int function, const char *model,
			     const char *uuid)
{
	struct nv_double_gpu *g;
	/* 32 as the real driver's buffer: room for a 32-bit domain. */
	char name[32];
	unsigned int i;

	if (!proc_nvidia_gpus)
		return -ENODEV;
	if (minor >= NV_DOUBLE_PROCFS_MAX_GPUS || bus > 0xff || slot > 0x1f ||
	    function > 7)
		return -EINVAL;
	g = &nv_double_gpus[minor];
	if (g->dir)
		return -EEXIST;
	/* Two GPUs at one location would collide in gpus/. */
	for (i = 0; i < NV_DOUBLE_PROCFS_MAX_GPUS; i++) {
		const struct nv_double_gpu *o = &nv_double_gpus[i];

		if (o->dir && o->domain == domain && o->bus == bus &&
		    o->slot == slot && o->function == function)
			return -EEXIST;
	}
	if (strscpy(g->model, model, sizeof(g->model)) < 0 ||
	    strscpy(g->uuid, uuid, sizeof(g->uuid)) < 0) {
		memset(g, 0, sizeof(*g));
		return -E2BIG;
	}
	g->minor = minor;
	g->domain = domain;
	g->bus = bus;
	g->slot = slot;
	g->function = function;
	snprintf(name, sizeof(name), "%04x:%02x:%02x.%1x", domain, bus, slot,
		 function);
	g->dir = proc_mkdir(name, proc_nvidia_gpus);
	if (!g->dir)
		goto fail;
	if (!proc_create_single_data("information", 0444, g->dir,
				     information_show, g))
		goto fail;
	return 0;
fail:
	/* NULL-safe; removes the directory and anything made in it. */
	proc_remove(g->dir);
	memset(g, 0, sizeof(*g));
	return -ENOMEM;
}

void nv_double_procfs_exit(void)
{
	/* The whole tree, the GPUs' directories included; waits for readers. */
	proc_remove(proc_nvidia);
	proc_nvidia = NULL;
	proc_nvidia_gpus = NULL;
	memset(nv_double_gpus, 0, sizeof(nv_double_gpus));
}
