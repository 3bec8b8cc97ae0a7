/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C compiler's layout of struct task_struct, for the check in
 * src/kapi/task.rs that bindgen's layout (kernel::bindings::task_struct,
 * which Rust reads fields through) agrees with it (task.c).
 */
#ifndef VGPU_C_TASK_H
#define VGPU_C_TASK_H

#include <linux/types.h>

/* Offsets (and the size) of the fields Rust reads; src/kapi/task.rs. */
struct vgpu_task_layout {
	size_t size;
	size_t flags;
	size_t stats;
	size_t mm;
	size_t cred;
	size_t files;
	size_t signal;
};

/* Fills *out with the C compiler's offsets. */
void vgpu_task_layout(struct vgpu_task_layout *out);

#endif
