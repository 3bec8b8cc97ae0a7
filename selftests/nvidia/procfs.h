/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /proc/driver/nvidia of the NVIDIA driver double (procfs.c): the kernel
 * crate of Linux 7.3 has no procfs abstraction, so the files are made in C
 * and the Rust crate holds them through procfs.rs.
 */
#ifndef NV_DOUBLE_PROCFS_H
#define NV_DOUBLE_PROCFS_H

/* Most GPUs nv_double_procfs_add_gpu takes (the double's MAX_GPUS). */
#define NV_DOUBLE_PROCFS_MAX_GPUS 8

/* Makes /proc/driver/nvidia with "params", "version" and an empty "gpus"
 * for release `release` (copied); 0 or -ENOMEM. */
int nv_double_procfs_init(const char *release);
/* Makes gpus/<domain:bus:slot.function>/information for the GPU of
 * /dev/nvidia`minor`, showing `model` and `uuid` (both copied). 0;
 * -ENODEV before nv_double_procfs_init; -EINVAL for a minor of
 * NV_DOUBLE_PROCFS_MAX_GPUS or more or a location out of PCI's ranges;
 * -EEXIST for a minor or location already added; -E2BIG for a string
 * longer than the double keeps; -ENOMEM if procfs fails. On an error
 * nothing of this GPU is left. */
int nv_double_procfs_add_gpu(unsigned int minor, unsigned int domain,
			     unsigned int bus, unsigned int slot,
			     unsigned int function, const char *model,
			     const char *uuid);
/* Removes them all, the GPUs' too; a no-op if nv_double_procfs_init failed
 * or never ran. */
void nv_double_procfs_exit(void);

#endif
