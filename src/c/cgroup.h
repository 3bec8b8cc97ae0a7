/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The calling task's cgroup (v2) path: task_dfl_cgroup() is an inline
 * function reading an RCU-protected pointer, and the kernel crate has no
 * cgroup abstraction. Wrapped by src/kapi/cgroup.rs.
 */
#ifndef VGPU_C_CGROUP_H
#define VGPU_C_CGROUP_H

#include <linux/types.h>

/*
 * Writes the calling task's cgroup v2 path (from the cgroup2 root, as the
 * host sees it) into buf. Returns its length, or a negative errno.
 */
int vgpu_current_cgroup_path(char *buf, size_t len);

#endif
