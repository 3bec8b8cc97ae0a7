// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/driver/nvidia of the NVIDIA driver double. The real driver makes
 * this directory at load, with "params", "version", "registry", "gpus/"
 * and more (kernel-open/nvidia/nv-procfs.c, nv_procfs_init, 595.45.04;
 * the same in every branch vgpu supports). The double makes the two files
 * container tooling reads:
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
 */
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include "procfs.h"

static struct proc_dir_entry *proc_nvidia;
static char nv_double_release[32];

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

int nv_double_procfs_init(const char *release)
{
	strscpy(nv_double_release, release, sizeof(nv_double_release));
	proc_nvidia = proc_mkdir("driver/nvidia", NULL);
	if (!proc_nvidia)
		return -ENOMEM;
	if (!proc_create_single("params", 0444, proc_nvidia, params_show) ||
	    !proc_create_single("version", 0444, proc_nvidia, version_show)) {
		proc_remove(proc_nvidia);
		proc_nvidia = NULL;
		return -ENOMEM;
	}
	return 0;
}

void nv_double_procfs_exit(void)
{
	proc_remove(proc_nvidia);
	proc_nvidia = NULL;
}
