// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for vgpu's Rust crate: kernel facilities that exist only as
 * inline functions or macros, or whose structures Rust cannot lay out
 * reliably (bindgen's layout of struct task_struct is not the compiler's).
 * Each is wrapped safely in src/kapi/.
 */
#include <linux/cgroup.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>

/*
 * Writes the calling task's cgroup v2 path (from the cgroup2 root, as the
 * host sees it) into buf. Returns its length, or a negative errno.
 */
int vgpu_current_cgroup_path(char *buf, size_t len);
int vgpu_current_cgroup_path(char *buf, size_t len)
{
	struct cgroup *cgrp;
	int ret;

	rcu_read_lock();
	cgrp = task_dfl_cgroup(current);
	ret = cgroup_path(cgrp, buf, len);
	rcu_read_unlock();
	return ret;
}
