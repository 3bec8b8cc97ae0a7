// SPDX-License-Identifier: GPL-2.0
/*
 * Symbol exports of the NVIDIA driver double. Rust modules cannot export
 * symbols to other modules yet, so the Rust crate defines the function and
 * this file exports it under the name nvidia.ko uses.
 */
#include <linux/export.h>
#include <linux/mm.h>

struct nvidia_rm_ops;
unsigned int nvidia_get_rm_ops(struct nvidia_rm_ops *ops);
EXPORT_SYMBOL_GPL(nvidia_get_rm_ops);

/* page_address() is a macro: the Rust crate calls it through this. */
void *nv_double_page_address(struct page *page);
void *nv_double_page_address(struct page *page)
{
	return page_address(page);
}

/*
 * Task and VMA fields for the UVM node. The Rust crate never reads
 * task_struct fields itself (bindgen's layout of it is wrong on the test
 * kernels), and keeps to these helpers for the VMA fields the kernel crate
 * does not wrap.
 */
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>

/* current->mm with an mmgrab() reference for the caller, or NULL. */
struct mm_struct *nv_double_current_mm_grab(void);
struct mm_struct *nv_double_current_mm_grab(void)
{
	struct mm_struct *mm = current->mm;

	if (mm)
		mmgrab(mm);
	return mm;
}

/* The calling task's thread group id (its process id). */
int nv_double_current_tgid(void);
int nv_double_current_tgid(void)
{
	return task_tgid_nr(current);
}

/* vma->vm_pgoff. */
unsigned long nv_double_vma_pgoff(struct vm_area_struct *vma);
unsigned long nv_double_vma_pgoff(struct vm_area_struct *vma)
{
	return vma->vm_pgoff;
}

/* vma->vm_private_data. */
void *nv_double_vma_private(struct vm_area_struct *vma);
void *nv_double_vma_private(struct vm_area_struct *vma)
{
	return vma->vm_private_data;
}

/* Sets vma->vm_ops (unless NULL) and vma->vm_private_data. */
void nv_double_vma_set(struct vm_area_struct *vma,
		       const struct vm_operations_struct *ops, void *data);
void nv_double_vma_set(struct vm_area_struct *vma,
		       const struct vm_operations_struct *ops, void *data)
{
	if (ops)
		vma->vm_ops = ops;
	vma->vm_private_data = data;
}

/*
 * OS-descriptor memory (RM_ALLOC_MEMORY class 0x71): RM pins the caller's
 * pages with FOLL_LONGTERM, writable unless asked read-only, and unpins
 * them dirty when the memory is freed (os_lock_user_pages and
 * os_unlock_user_pages, kernel-open/nvidia/os-mlock.c:216-333 at
 * 550.163.01). Returns how many of the n pages were pinned (all of them,
 * or none: a partial pin is undone), or a negative errno.
 */
long nv_double_pin_user_pages(unsigned long start, unsigned long n, int write,
			      struct page **pages);
long nv_double_pin_user_pages(unsigned long start, unsigned long n, int write,
			      struct page **pages)
{
	long ret = pin_user_pages_fast(start, n,
				       (write ? FOLL_WRITE : 0) | FOLL_LONGTERM,
				       pages);

	if (ret > 0 && (unsigned long)ret < n) {
		unpin_user_pages(pages, ret);
		return 0;
	}
	return ret;
}

void nv_double_unpin_user_pages(struct page **pages, unsigned long n);
void nv_double_unpin_user_pages(struct page **pages, unsigned long n)
{
	unpin_user_pages_dirty_lock(pages, n, true);
}
