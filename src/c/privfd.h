/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Calling the driver with an fd that names one of vgpu's private real files,
 * without that file ever entering a user process's fd table (privfd.c).
 * Wrapped by RealFile::ioctl_block_naming in src/kapi/realfile.rs.
 *
 * This stays in C: it swaps current->files under task_lock() and takes
 * current->signal->exec_update_lock, and the kernel crate has no safe
 * interface for either (nor for init_task's table, get_unused_fd_flags()
 * against a borrowed table, or close_fd()).
 */
#ifndef VGPU_C_PRIVFD_H
#define VGPU_C_PRIVFD_H

struct file;

/*
 * Runs `on`'s ioctl(cmd, arg) for the current task, with *fd_field (the
 * kernel address of the fd field of the block at arg, in a bounce slot) set
 * to an fd naming `target` in a table only the kernel can reach. Returns the
 * ioctl's result or a negative errno.
 */
long vgpu_ioctl_with_private_fd(struct file *on, struct file *target, unsigned int cmd,
				unsigned long arg, int *fd_field);

#endif
