/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /proc/driver/nvidia of the NVIDIA driver double (procfs.c): the kernel
 * crate of Linux 7.3 has no procfs abstraction, so the files are made in C
 * and the Rust crate holds them through procfs.rs.
 */
#ifndef NV_DOUBLE_PROCFS_H
#define NV_DOUBLE_PROCFS_H

/* Makes /proc/driver/nvidia with "params" and "version" for release
 * `release` (copied); 0 or -ENOMEM. */
int nv_double_procfs_init(const char *release);
/* Removes them; a no-op if nv_double_procfs_init failed or never ran. */
void nv_double_procfs_exit(void);

#endif
