// SPDX-License-Identifier: GPL-2.0
/* Processes by their struct pid (see pid.h). */
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "pid.h"

static_assert(TASK_COMM_LEN == 16);

struct pid *vgpu_pid_current_tgid(void)
{
	return get_task_pid(current, PIDTYPE_TGID);
}

void vgpu_pid_put(struct pid *pid)
{
	put_pid(pid);
}

void vgpu_pid_get(struct pid *pid)
{
	get_pid(pid);
}

int vgpu_pid_host_nr(struct pid *pid)
{
	return pid_nr(pid);
}

int vgpu_pid_vnr(struct pid *pid)
{
	return pid_vnr(pid);
}

bool vgpu_pid_alive(struct pid *pid)
{
	bool alive;

	rcu_read_lock();
	alive = pid_task(pid, PIDTYPE_TGID) != NULL;
	rcu_read_unlock();
	return alive;
}

void vgpu_current_comm(char out[16])
{
	char comm[TASK_COMM_LEN];

	get_task_comm(comm, current);
	memset(out, 0, TASK_COMM_LEN);
	strscpy(out, comm, TASK_COMM_LEN);
}
