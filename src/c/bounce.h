/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bounce areas: parameter blocks vgpu has checked, handed to the driver from
 * memory the caller cannot change (bounce.c; the mechanism is described
 * there). Wrapped by Slot in src/kapi/bounce.rs.
 *
 * This stays in C: the area is a VM_PFNMAP mapping with vm_ops of its own
 * (fault, pfn_mkwrite, close, may_split, mremap) and sealed flags, and 7.3's
 * kernel crate can neither supply vm_operations_struct nor insert PFNs.
 */
#ifndef VGPU_C_BOUNCE_H
#define VGPU_C_BOUNCE_H

struct vgpu_bounce;

/*
 * Holds a clean slot of the current mm's bounce area for a call by the
 * current task (making the area on first use): its kernel address in
 * *kaddr, its user address in *uaddr. Waits (killably) while all slots are
 * held. Returns the area (for vgpu_bounce_put()) or an ERR_PTR.
 */
struct vgpu_bounce *vgpu_bounce_get(unsigned int *slot, void **kaddr, unsigned long *uaddr);

/*
 * Gives a slot back after its call; its PTEs may have been made writable.
 * The area stays allocated while it is mapped in the caller's mm.
 */
void vgpu_bounce_put(struct vgpu_bounce *b, unsigned int slot);

#endif
