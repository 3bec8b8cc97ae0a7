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
 * caller's other threads keep using the process's table throughout. The
 * block is vgpu's copy in a bounce slot (below), written here through its
 * kernel address, so no thread can rewrite it before the driver reads it;
 * calls are serialised, so that only one private file is in the kernel's
 * table at a time, and the driver refuses anything that is not its own
 * file. Other tasks reach a task's table
 * through pidfd_getfd() and kcmp() under the process's exec_update_lock,
 * held here for writing, so they cannot fetch the file while it is there.
 */
static DEFINE_MUTEX(vgpu_privfd_lock);

/*
 * Runs `on`'s ioctl(cmd, arg) for the current task, with *fd_field (the
 * kernel address of the fd field of the block at arg, in a bounce slot) set
 * to an fd naming `target` in a table only the kernel can reach. Returns the
 * ioctl's result or a negative errno.
 */
long vgpu_ioctl_with_private_fd(struct file *on, struct file *target, unsigned int cmd,
				unsigned long arg, int *fd_field);
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

#include <linux/anon_inodes.h>
#include <linux/mman.h>
#include <linux/bitops.h>
#include <linux/hashtable.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

/*
 * Bounce areas: parameter blocks vgpu has checked, handed to the driver from
 * memory the caller cannot change (src/kapi/bounce.rs wraps these).
 *
 * The driver reads a call's top-level block with copy_from_user() from the
 * address it is given, in the calling task's mm. A block vgpu checked in the
 * caller's own memory could be rewritten by another thread before the driver
 * reads it. So vgpu copies the block into a slot of a bounce area and gives
 * the driver the slot's user address instead. A bounce area is a mapping
 * vgpu makes in the caller's mm (one per mm, made on first use, gone with
 * the mm):
 *
 *  - its pages are vgpu's own, mapped VM_PFNMAP, so no get_user_pages()
 *    (process_vm_writev, /proc/<pid>/mem, ptrace) reaches them;
 *  - it is sealed (VM_SEALED) and VM_IO | VM_DONTCOPY | VM_DONTEXPAND: it
 *    cannot be unmapped, moved, replaced by MAP_FIXED, re-protected or
 *    inherited, so its address keeps naming these pages;
 *  - its PTEs are read-only, and a write fault (pfn_mkwrite) is allowed only
 *    to the task that holds that slot for a call: the driver writing its
 *    answer back. Any other writer gets SIGBUS (a kernel access, EFAULT).
 *
 * A slot whose PTEs were made writable is zapped before it is handed out
 * again, so from the moment vgpu writes a block into a slot until the
 * driver has read it, only the calling task, which is inside vgpu and the
 * driver, can change it. What the driver writes back is not protected in
 * the same way (once writable, any thread of the process may write): vgpu
 * trusts no result it reads back from a slot for anything but the caller's
 * own view. vgpu itself fills slots through their kernel mapping only (the
 * fd field of an fd-naming call too), never through the user mapping.
 *
 * The area's file holds the module, so a process that used vgpu keeps it
 * loaded until the process exits or execs.
 */
#define VGPU_BOUNCE_SLOTS 8
#define VGPU_BOUNCE_SLOT_SIZE (16 * 1024)
#define VGPU_BOUNCE_SIZE (VGPU_BOUNCE_SLOTS * VGPU_BOUNCE_SLOT_SIZE)
#define VGPU_BOUNCE_ALL ((1UL << VGPU_BOUNCE_SLOTS) - 1)

struct vgpu_bounce {
	struct hlist_node node;		/* in vgpu_bounces while mapped */
	struct mm_struct *mm;		/* compared only; off the list before it goes */
	struct vm_area_struct *vma;	/* set by mmap; lives as long as the mm */
	unsigned long start;		/* user address of the area */
	void *kaddr;			/* the area's pages (vmalloc) */
	spinlock_t lock;		/* busy, dirty, writer */
	unsigned long busy;		/* slots held for a call */
	unsigned long dirty;		/* slots whose PTEs may be writable */
	struct task_struct *writer[VGPU_BOUNCE_SLOTS];
	wait_queue_head_t wait;		/* for a free slot */
};

/* The areas, by mm. */
static DEFINE_HASHTABLE(vgpu_bounces, 8);
static DEFINE_SPINLOCK(vgpu_bounces_lock);
/* Serialises making areas, so that an mm gets one; taken before mmap_lock. */
static DEFINE_MUTEX(vgpu_bounce_make_lock);

static bool vgpu_bounce_may_write(struct vgpu_bounce *b, unsigned long off)
{
	bool ok;

	if (off >= VGPU_BOUNCE_SIZE)
		return false;
	spin_lock(&b->lock);
	ok = b->writer[off / VGPU_BOUNCE_SLOT_SIZE] == current;
	spin_unlock(&b->lock);
	return ok;
}

static vm_fault_t vgpu_bounce_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct vgpu_bounce *b = vma->vm_private_data;
	unsigned long off = vmf->address - vma->vm_start;

	if (off >= VGPU_BOUNCE_SIZE)
		return VM_FAULT_SIGBUS;
	if ((vmf->flags & FAULT_FLAG_WRITE) && !vgpu_bounce_may_write(b, off))
		return VM_FAULT_SIGBUS;
	/* Read-only (vm_page_prot tracks writes): a write comes back via mkwrite. */
	return vmf_insert_pfn(vma, vmf->address, vmalloc_to_pfn(b->kaddr + off));
}

static vm_fault_t vgpu_bounce_pfn_mkwrite(struct vm_fault *vmf)
{
	struct vgpu_bounce *b = vmf->vma->vm_private_data;

	return vgpu_bounce_may_write(b, vmf->address - vmf->vma->vm_start) ? 0 : VM_FAULT_SIGBUS;
}

static void vgpu_bounce_vma_close(struct vm_area_struct *vma)
{
	struct vgpu_bounce *b = vma->vm_private_data;

	spin_lock(&vgpu_bounces_lock);
	hash_del(&b->node);
	spin_unlock(&vgpu_bounces_lock);
}

static int vgpu_bounce_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	return -EINVAL;
}

static int vgpu_bounce_mremap(struct vm_area_struct *vma)
{
	return -EINVAL;
}

static const struct vm_operations_struct vgpu_bounce_vm_ops = {
	.fault = vgpu_bounce_fault,
	.pfn_mkwrite = vgpu_bounce_pfn_mkwrite,
	.close = vgpu_bounce_vma_close,
	.may_split = vgpu_bounce_may_split,
	.mremap = vgpu_bounce_mremap,
};

static int vgpu_bounce_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct vgpu_bounce *b = file->private_data;

	/* Only vgpu_bounce_make() maps the file, once; no fd ever names it. */
	if (b->vma || vma->vm_pgoff || vma->vm_end - vma->vm_start != VGPU_BOUNCE_SIZE ||
	    !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP |
			  VM_SEALED);
	vm_flags_clear(vma, VM_MAYEXEC);
	vma->vm_ops = &vgpu_bounce_vm_ops;
	vma->vm_private_data = b;
	b->vma = vma;
	return 0;
}

/* The last reference to the file goes after the mapping's: free the area. */
static int vgpu_bounce_release(struct inode *inode, struct file *file)
{
	struct vgpu_bounce *b = file->private_data;

	vfree(b->kaddr);
	kfree(b);
	return 0;
}

static const struct file_operations vgpu_bounce_fops = {
	.owner = THIS_MODULE,
	.mmap = vgpu_bounce_mmap,
	.release = vgpu_bounce_release,
};

static struct vgpu_bounce *vgpu_bounce_find(struct mm_struct *mm)
{
	struct vgpu_bounce *b, *found = NULL;

	spin_lock(&vgpu_bounces_lock);
	hash_for_each_possible(vgpu_bounces, b, node, (unsigned long)mm) {
		if (b->mm == mm) {
			found = b;
			break;
		}
	}
	spin_unlock(&vgpu_bounces_lock);
	return found;
}

/*
 * Maps the first page of each slot in `slots` read-only ahead of use (most
 * blocks fit in it), so that the driver's read of a block does not fault.
 * Caller holds the mmap lock.
 */
static void vgpu_bounce_prefault(struct vgpu_bounce *b, unsigned long slots)
{
	unsigned long off;
	unsigned int s;

	for_each_set_bit(s, &slots, VGPU_BOUNCE_SLOTS) {
		off = s * VGPU_BOUNCE_SLOT_SIZE;
		vmf_insert_pfn(b->vma, b->start + off, vmalloc_to_pfn(b->kaddr + off));
	}
}

/* Maps a new bounce area into the current mm. */
static struct vgpu_bounce *vgpu_bounce_make(void)
{
	struct vgpu_bounce *b;
	struct file *file;
	unsigned long addr;

	b = kzalloc(sizeof(*b), GFP_KERNEL_ACCOUNT);
	if (!b)
		return ERR_PTR(-ENOMEM);
	b->kaddr = __vmalloc(VGPU_BOUNCE_SIZE, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!b->kaddr) {
		kfree(b);
		return ERR_PTR(-ENOMEM);
	}
	INIT_HLIST_NODE(&b->node);
	spin_lock_init(&b->lock);
	init_waitqueue_head(&b->wait);
	b->mm = current->mm;
	file = anon_inode_getfile("[vgpu-bounce]", &vgpu_bounce_fops, b, O_RDWR);
	if (IS_ERR(file)) {
		vfree(b->kaddr);
		kfree(b);
		return ERR_CAST(file);
	}
	addr = vm_mmap(file, 0, VGPU_BOUNCE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, 0);
	/* The mapping holds the file now; if there is none, this frees b. */
	fput(file);
	if (IS_ERR_VALUE(addr))
		return ERR_PTR((long)addr);
	b->start = addr;
	mmap_read_lock(b->mm);
	vgpu_bounce_prefault(b, VGPU_BOUNCE_ALL);
	mmap_read_unlock(b->mm);
	spin_lock(&vgpu_bounces_lock);
	hash_add(vgpu_bounces, &b->node, (unsigned long)b->mm);
	spin_unlock(&vgpu_bounces_lock);
	return b;
}

/*
 * Zaps the PTEs of the whole area (one TLB flush), maps `slots` read-only
 * again and marks them clean. The zap may catch slots in use too: their
 * holders fault their pages back in.
 */
static void vgpu_bounce_scrub(struct vgpu_bounce *b, unsigned long slots)
{
	mmap_read_lock(b->mm);
	zap_special_vma_range(b->vma, b->start, VGPU_BOUNCE_SIZE);
	vgpu_bounce_prefault(b, slots);
	spin_lock(&b->lock);
	b->dirty &= ~slots;
	spin_unlock(&b->lock);
	mmap_read_unlock(b->mm);
}

/*
 * Holds a clean slot of the current mm's bounce area for a call by the
 * current task (making the area on first use): its kernel address in
 * *kaddr, its user address in *uaddr. Waits (killably) while all slots are
 * held. Returns the area (for vgpu_bounce_put()) or an ERR_PTR.
 */
struct vgpu_bounce *vgpu_bounce_get(unsigned int *slot, void **kaddr, unsigned long *uaddr);
struct vgpu_bounce *vgpu_bounce_get(unsigned int *slot, void **kaddr, unsigned long *uaddr)
{
	struct vgpu_bounce *b;
	unsigned long free;
	unsigned int s;

	if (!current->mm || (current->flags & PF_KTHREAD))
		return ERR_PTR(-EINVAL);
	b = vgpu_bounce_find(current->mm);
	if (!b) {
		if (mutex_lock_killable(&vgpu_bounce_make_lock))
			return ERR_PTR(-EINTR);
		b = vgpu_bounce_find(current->mm);
		if (!b)
			b = vgpu_bounce_make();
		mutex_unlock(&vgpu_bounce_make_lock);
		if (IS_ERR(b))
			return b;
	}
	for (;;) {
		spin_lock(&b->lock);
		free = ~b->busy & VGPU_BOUNCE_ALL;
		if (free & ~b->dirty) {
			s = __ffs(free & ~b->dirty);
			b->busy |= BIT(s);
			b->writer[s] = current;
			spin_unlock(&b->lock);
			break;
		}
		spin_unlock(&b->lock);
		if (free) {
			/* Only dirty slots are free: make them read-only again. */
			vgpu_bounce_scrub(b, free);
			continue;
		}
		if (wait_event_killable(b->wait, (READ_ONCE(b->busy) & VGPU_BOUNCE_ALL) !=
						 VGPU_BOUNCE_ALL))
			return ERR_PTR(-EINTR);
	}
	*slot = s;
	*kaddr = b->kaddr + s * VGPU_BOUNCE_SLOT_SIZE;
	*uaddr = b->start + s * VGPU_BOUNCE_SLOT_SIZE;
	return b;
}

/* Gives a slot back after its call; its PTEs may have been made writable. */
void vgpu_bounce_put(struct vgpu_bounce *b, unsigned int slot);
void vgpu_bounce_put(struct vgpu_bounce *b, unsigned int slot)
{
	spin_lock(&b->lock);
	b->writer[slot] = NULL;
	b->busy &= ~BIT(slot);
	b->dirty |= BIT(slot);
	spin_unlock(&b->lock);
	/* Pairs with the barrier in wait_event's prepare_to_wait. */
	if (wq_has_sleeper(&b->wait))
		wake_up(&b->wait);
}

/*
 * For the calls vgpu itself makes to the driver while it loads, in the
 * loading task (modprobe: root, trusted): scratch user memory in its mm,
 * and files opened with its credentials.
 */
unsigned long vgpu_scratch_map(unsigned long len);
unsigned long vgpu_scratch_map(unsigned long len)
{
	if (!current->mm || (current->flags & PF_KTHREAD))
		return -EINVAL;
	return vm_mmap(NULL, 0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, 0);
}

void vgpu_scratch_unmap(unsigned long addr, unsigned long len);
void vgpu_scratch_unmap(unsigned long addr, unsigned long len)
{
	vm_munmap(addr, len);
}

struct file *vgpu_open_as_current(const struct path *path, int flags);
struct file *vgpu_open_as_current(const struct path *path, int flags)
{
	return dentry_open(path, flags, current_cred());
}
