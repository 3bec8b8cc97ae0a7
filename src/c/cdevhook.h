/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vgpu behind the NVIDIA driver's own device nodes (cdevhook.c): the open
 * of the driver's character devices (major 195 and nvidia-uvm's) goes
 * through vgpu, which makes an open from a container bound to a vGPU its
 * proxy file and hands every other open to the driver's own open,
 * unchanged. Wrapped by src/kapi/cdevhook.rs. This stays in C: it swaps
 * `struct cdev`'s ops and works on `struct file_operations` copies, for
 * which the kernel crate has no abstraction.
 */
#ifndef VGPU_C_CDEVHOOK_H
#define VGPU_C_CDEVHOOK_H

#include <linux/types.h>

struct file;
struct inode;
struct path;
struct vgpu_cdev_hook;

/*
 * Takes over the open of the character device behind `path` (a device
 * node of the driver): its cdev's ops become a copy of the driver's whose
 * open is vgpu's. `kind` is passed back to vgpu_cdev_open(). Returns the
 * hook, NULL if the cdev is
 * already hooked (another node of the same cdev), or an ERR_PTR.
 */
struct vgpu_cdev_hook *vgpu_cdev_hook_install(const struct path *path, int kind);

/* Whether a driver serves the device node at `path` (a node whose
 * driver is gone has no cdev behind it). */
bool vgpu_cdev_present(const struct path *path);

/*
 * Gives the cdev its driver's ops back. The copy stays allocated (an open
 * may have read the cdev's ops just before): it now names the driver's own
 * open and owner, so such an open reaches the driver.
 */
void vgpu_cdev_hook_remove(struct vgpu_cdev_hook *hook);

/*
 * Implemented in Rust (src/proxy.rs): decides an open of a hooked
 * device by the opener. Returns 1 if the driver's own open is to run,
 * 0 if vgpu made `filp` its own (vgpu_cdev_adopt()), or a negative errno.
 */
int vgpu_cdev_open(int kind, unsigned int minor, struct file *filp);

/*
 * Turns `filp`, in its open, into a file of vgpu's `fops`: takes a
 * reference on their owner, as chrdev_open does for the driver's. Returns
 * 0 or -ENODEV (the owner is going away).
 */
int vgpu_cdev_adopt(struct file *filp, const struct file_operations *fops);

/* The mount an open file lies on (to tell vgpu's own opens of the driver,
 * on its private mounts, from everyone else's). */
const void *vgpu_cdev_file_mount(const struct file *filp);

/*
 * While vgpu is loaded, refuses the load of nvidia_uvm, whose device vgpu
 * could not take over. Returns 0 or an errno.
 */
int vgpu_cdev_watch_modules(void);
void vgpu_cdev_unwatch_modules(void);

#endif
