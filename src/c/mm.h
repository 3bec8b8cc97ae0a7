/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Walking an address space's VMAs (mm.c). Wrapped by src/kapi/mm.rs, which
 * holds the references and takes the locks (kernel::mm); this stays in C
 * because 7.3's kernel::mm has no VMA iterator (only vma_lookup()) and
 * VmaRef does not expose vm_file.
 */
#ifndef VGPU_C_MM_H
#define VGPU_C_MM_H

struct file;
struct mm_struct;

/*
 * Bytes of [start, end) in mm that are mapped from `file` (compared by
 * address only, never followed). The caller holds a user reference on mm
 * and its mmap lock (reading or writing); ULONG_MAX if the lock is not held
 * at all.
 */
unsigned long vgpu_mm_mapped_bytes_locked(struct mm_struct *mm, const struct file *file,
					  unsigned long start, unsigned long end);

#endif
