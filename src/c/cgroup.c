// SPDX-License-Identifier: GPL-2.0
/* The calling task's cgroup path (see cgroup.h). */
#include <linux/cgroup.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>

#include "cgroup.h"

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
