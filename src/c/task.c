// SPDX-License-Identifier: GPL-2.0
/* struct task_struct as the C compiler lays it out (see task.h). */
#include <linux/sched.h>
#include <linux/stddef.h>

#include "task.h"

void vgpu_task_layout(struct vgpu_task_layout *out)
{
	out->size = sizeof(struct task_struct);
	out->flags = offsetof(struct task_struct, flags);
	out->stats = offsetof(struct task_struct, stats);
	out->mm = offsetof(struct task_struct, mm);
	out->cred = offsetof(struct task_struct, cred);
	out->files = offsetof(struct task_struct, files);
	out->signal = offsetof(struct task_struct, signal);
}
