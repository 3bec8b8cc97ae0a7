/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A device node's path on a private, nodev clone of its mount (mount.c).
 * Wrapped by RealNode in src/kapi/realfile.rs. This stays in C: it sets
 * mnt_flags on the clone's struct vfsmount, and the kernel crate has no
 * mount abstraction.
 */
#ifndef VGPU_C_MOUNT_H
#define VGPU_C_MOUNT_H

struct path;

/*
 * Moves a resolved device node's path onto a private clone of its mount
 * with MNT_NODEV set. Files vgpu opens on it (dentry_open) work as before,
 * but nobody can open the node again through them by path: a reopen of
 * /proc/<pid>/fd/<n> (which a container could try while a private file sits
 * in the kernel's table for one of its calls) fails the nodev check. The
 * clone is attached nowhere and is released with vgpu_path_put_private().
 * Returns 0 or a negative errno (the path is then unchanged).
 */
int vgpu_path_make_private(struct path *path);

/* Drops a path made by vgpu_path_make_private(). */
void vgpu_path_put_private(struct path *path);

#endif
