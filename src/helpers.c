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

#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/err.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mutex.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>

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
 * caller's other threads keep using the process's table throughout. Calls
 * are serialised, so a thread of the caller that rewrites the fd field
 * meanwhile can only name a descriptor of the kernel's table where no other
 * private file is installed at that moment, and the driver refuses
 * anything that is not its own file. Other tasks reach a task's table
 * through pidfd_getfd() and kcmp() under the process's exec_update_lock,
 * held here for writing, so they cannot fetch the file while it is there.
 */
static DEFINE_MUTEX(vgpu_privfd_lock);

/*
 * Runs `on`'s ioctl(cmd, arg) for the current task, with the int at user
 * address fd_field set to an fd naming `target` in a table only the kernel
 * can reach. Returns the ioctl's result or a negative errno.
 */
long vgpu_ioctl_with_private_fd(struct file *on, struct file *target, unsigned int cmd,
				unsigned long arg, unsigned long fd_field);
long vgpu_ioctl_with_private_fd(struct file *on, struct file *target, unsigned int cmd,
				unsigned long arg, unsigned long fd_field)
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
		if (put_user(fd, (int __user *)fd_field))
			ret = -EFAULT;
		else
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

#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/sched/mm.h>

/*
 * Address spaces, for charging what a process maps of the nvidia-uvm file
 * (src/kapi/mm.rs wraps these).
 */

/* The calling task's mm with an mm_count reference, or NULL (kernel thread). */
struct mm_struct *vgpu_mm_grab_current(void);
struct mm_struct *vgpu_mm_grab_current(void)
{
	struct mm_struct *mm = current->mm;

	if (mm)
		mmgrab(mm);
	return mm;
}

/* Another mm_count reference to an mm the caller holds one on. */
void vgpu_mm_grab(struct mm_struct *mm);
void vgpu_mm_grab(struct mm_struct *mm)
{
	mmgrab(mm);
}

/* Drops an mm_count reference. */
void vgpu_mm_drop(struct mm_struct *mm);
void vgpu_mm_drop(struct mm_struct *mm)
{
	mmdrop(mm);
}

static unsigned long vgpu_mapped_bytes_walk(struct mm_struct *mm, const struct file *file,
					    unsigned long start, unsigned long end)
{
	struct vm_area_struct *vma;
	unsigned long bytes = 0;
	VMA_ITERATOR(vmi, mm, start);

	for_each_vma_range(vmi, vma, end) {
		if (vma->vm_file == file)
			bytes += min(end, vma->vm_end) - max(start, vma->vm_start);
	}
	return bytes;
}

/*
 * Walks another task's (or no task's) mm for vgpu_mapped_bytes*: 0 when it
 * has no users left. `wait` takes its mmap lock as a reader; otherwise only
 * if that needs no waiting (ULONG_MAX if not), and the user reference is
 * then dropped asynchronously (a last mmput must not tear an mm down under
 * the caller's own mmap lock).
 */
static unsigned long vgpu_mapped_bytes_of(struct mm_struct *mm, const struct file *file,
					  unsigned long start, unsigned long end, bool wait)
{
	unsigned long bytes;

	if (!mmget_not_zero(mm))
		return 0;
	if (wait) {
		mmap_read_lock(mm);
	} else if (!mmap_read_trylock(mm)) {
		mmput_async(mm);
		return ULONG_MAX;
	}
	bytes = vgpu_mapped_bytes_walk(mm, file, start, end);
	mmap_read_unlock(mm);
	if (wait)
		mmput(mm);
	else
		mmput_async(mm);
	return bytes;
}

/*
 * Bytes of [start, end) in mm that are mapped from `file` (compared by
 * address only). 0 when the mm has no users left. Takes the mmap lock for
 * reading: the caller must not hold it.
 */
unsigned long vgpu_mapped_bytes(struct mm_struct *mm, const struct file *file,
				unsigned long start, unsigned long end);
unsigned long vgpu_mapped_bytes(struct mm_struct *mm, const struct file *file,
				unsigned long start, unsigned long end)
{
	return vgpu_mapped_bytes_of(mm, file, start, end, true);
}

/*
 * As vgpu_mapped_bytes, from inside an mmap handler, whose caller holds the
 * calling task's mmap lock for writing: the caller's own mm is walked under
 * that lock, another mm only if its lock can be had without waiting (two
 * tasks mapping at once must not wait for each other). Returns ULONG_MAX
 * when it cannot tell.
 */
unsigned long vgpu_mapped_bytes_in_mmap(struct mm_struct *mm, const struct file *file,
					unsigned long start, unsigned long end);
unsigned long vgpu_mapped_bytes_in_mmap(struct mm_struct *mm, const struct file *file,
					unsigned long start, unsigned long end)
{
	if (current->mm != mm)
		return vgpu_mapped_bytes_of(mm, file, start, end, false);
	if (!rwsem_is_locked(&mm->mmap_lock))
		return ULONG_MAX;
	return vgpu_mapped_bytes_walk(mm, file, start, end);
}

#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/path.h>

/*
 * Moves a resolved device node's path onto a private clone of its mount
 * with MNT_NODEV set. Files vgpu opens on it (dentry_open) work as before,
 * but nobody can open the node again through them by path: a reopen of
 * /proc/<pid>/fd/<n> (which a container could try while a private file sits
 * in the kernel's table for one of its calls) fails the nodev check. The
 * clone is attached nowhere and is released with vgpu_path_put_private().
 */
int vgpu_path_make_private(struct path *path);
int vgpu_path_make_private(struct path *path)
{
	struct vfsmount *m = clone_private_mount(path);

	if (IS_ERR(m))
		return PTR_ERR(m);
	m->mnt_flags |= MNT_NODEV;
	mntput(path->mnt);
	path->mnt = m;
	return 0;
}

/* Drops a path made by vgpu_path_make_private(). */
void vgpu_path_put_private(struct path *path);
void vgpu_path_put_private(struct path *path)
{
	dput(path->dentry);
	kern_unmount(path->mnt);
}
