// SPDX-License-Identifier: GPL-2.0
/*
 * Bounce areas: parameter blocks vgpu has checked, handed to the driver from
 * memory the caller cannot change.
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
#include <linux/anon_inodes.h>
#include <linux/bitops.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/mmap_lock.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "bounce.h"

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
