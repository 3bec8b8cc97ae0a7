/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fault-injection points of vgpu (inject.c), for the kernel's fail_function
 * framework (Documentation/fault-injection/fault-injection.rst): each is a
 * function that returns 0 unless fail_function overrides its return value,
 * called where vgpu is about to do what it names. src/kapi/inject.rs wraps
 * them.
 */
#ifndef VGPU_C_INJECT_H
#define VGPU_C_INJECT_H

/* Before every call into the NVIDIA driver (kernel-client op, forwarded
 * ioctl or mmap): 0, or a negative errno the call fails with instead. */
int vgpu_inject_driver_call(void);

/* Before vgpu records something it must later undo (a charge, an object,
 * a TSG, a held mapping): 0, or a negative errno (ENOMEM as a rule). */
int vgpu_inject_record(void);

#endif
