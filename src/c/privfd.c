// SPDX-License-Identifier: GPL-2.0
/*
 * Calling the driver with an fd that names one of vgpu's private real files,
 * without that file ever entering a user process's fd table.
 *
 * The driver looks fds up in the calling task's table, and ties some calls
 * to the calling process too: RM creates a mapping context only for the
 * process that created the client (its ProcID, current->tgid). So the call
 * runs in the caller's own task, with the caller's memory, but for its
 * duration that one task looks fds up in the kernel's own table
 * (init_task's, which no user process can reach): the private file is
 * installed there, its fd number written into the block's fd field, the
 * driver called, the fd closed and the task's own table put back. The
 * caller's other threads keep using the process's table throughout. The
 * block is vgpu's copy in a bounce slot (bounce.c), written here through its
 * kernel address, so no thread can rewrite it before the driver reads it;
 * calls are serialised, so that only one private file is in the kernel's
 * table at a time, and the driver refuses anything that is not its own
 * file. Other tasks reach a task's table
 * through pidfd_getfd() and kcmp() under the process's exec_update_lock,
 * held here for writing, so they cannot fetch the file while it is there.
 */
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>

#include "privfd.h"

static DEFINE_MUTEX(vgpu_privfd_lock);

long vgpu_ioctl_with_private_fd(struct file *on, struct file *target, unsigned int cmd,
				unsigned long arg, int *fd_field)
{
	struct files_struct *own;
	long ret;
	int fd;

	if (!on->f_op->unlocked_ioctl)
		return -ENOTTY;
	if (!current->mm || (current->flags & PF_KTHREAD))
		return -EINVAL;
	mutex_lock(&vgpu_privfd_lock);
	ret = down_write_killable(&current->signal->exec_update_lock);
	if (ret)
		goto unlock;
	task_lock(current);
	own = current->files;
	current->files = init_task.files;
	task_unlock(current);

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
	} else {
		fd_install(fd, get_file(target));
		WRITE_ONCE(*fd_field, fd);
		ret = on->f_op->unlocked_ioctl(on, cmd, arg);
		close_fd(fd);
	}

	task_lock(current);
	current->files = own;
	task_unlock(current);
	up_write(&current->signal->exec_update_lock);
unlock:
	mutex_unlock(&vgpu_privfd_lock);
	return ret;
}
