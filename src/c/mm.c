// SPDX-License-Identifier: GPL-2.0
/* Counting what an address space maps of a file (see mm.h). */
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/rwsem.h>

#include "mm.h"

unsigned long vgpu_mm_mapped_bytes_locked(struct mm_struct *mm, const struct file *file,
					  unsigned long start, unsigned long end)
{
	struct vm_area_struct *vma;
	unsigned long bytes = 0;
	VMA_ITERATOR(vmi, mm, start);

	if (!rwsem_is_locked(&mm->mmap_lock))
		return ULONG_MAX;
	for_each_vma_range(vmi, vma, end) {
		if (vma->vm_file == file)
			bytes += min(end, vma->vm_end) - max(start, vma->vm_start);
	}
	return bytes;
}
