// SPDX-License-Identifier: GPL-2.0
/*
 * vgpu behind the NVIDIA driver's own device nodes (see cdevhook.h and
 * docs/design-notes.md, "NVIDIA's own nodes").
 *
 * chrdev_open() (fs/char_dev.c) finds a node's struct cdev, takes
 * fops_get(cdev->ops), installs them in the file and calls their open. A
 * hook replaces cdev->ops with a copy of the driver's operations whose
 * open is vgpu_hook_open() and whose owner is vgpu: every open of the
 * device, through any node with its numbers, comes here first, with vgpu
 * pinned. An open the driver is to serve gets the driver's own operations
 * back (a reference on the driver taken, vgpu's dropped, as misc_open()
 * does for a misc device's) and their open; so the file is the driver's
 * from then on, and its ioctls cost what they cost without vgpu.
 */
#include <linux/cdev.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/kmemleak.h>
#include <linux/module.h>
#include <linux/notifier.h>
#include <linux/path.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "cdevhook.h"

struct vgpu_cdev_hook {
	struct cdev *cdev;
	const struct file_operations *orig;
	/* The copy installed in cdev->ops; outlives the hook (see remove). */
	struct vgpu_hook_fops *wrap;
	int kind;
};

/* Operations with their hook, found from the file in its open. */
struct vgpu_hook_fops {
	struct file_operations fops;
	struct vgpu_cdev_hook *hook;
};

/* The hooks installed, so that a cdev is hooked once (a driver may serve
 * several nodes, e.g. the double's ctl and GPU minors, with one cdev). */
#define VGPU_MAX_HOOKS 8
static struct vgpu_cdev_hook *hooks[VGPU_MAX_HOOKS];
static DEFINE_MUTEX(hooks_lock);

static int vgpu_hook_open(struct inode *inode, struct file *filp)
{
	struct vgpu_hook_fops *w =
		container_of(filp->f_op, struct vgpu_hook_fops, fops);
	struct vgpu_cdev_hook *h = READ_ONCE(w->hook);
	const struct file_operations *fops;
	int r;

	/*
	 * The file holds a reference on vgpu (the copy's owner) for the
	 * duration of this call, so the hook is installed: remove() runs
	 * from vgpu's exit, which cannot start while it is held.
	 */
	if (!h)
		return -ENODEV;
	r = vgpu_cdev_open(h->kind, iminor(inode), filp);
	if (r <= 0)
		return r;
	fops = fops_get(h->orig);
	if (!fops)
		return -ENODEV;
	replace_fops(filp, fops);
	if (filp->f_op->open)
		return filp->f_op->open(inode, filp);
	return 0;
}

int vgpu_cdev_adopt(struct file *filp, const struct file_operations *fops)
{
	fops = fops_get(fops);
	if (!fops)
		return -ENODEV;
	replace_fops(filp, fops);
	return 0;
}

const void *vgpu_cdev_file_mount(const struct file *filp)
{
	return filp->f_path.mnt;
}

/* The cdev behind a device node: chrdev_open() records it in the inode,
 * even when the driver's open then fails (the node's device may be
 * absent, e.g. a GPU minor with no GPU). */
static struct cdev *cdev_of(const struct path *path)
{
	struct inode *inode = d_inode(path->dentry);
	struct file *f;

	if (!inode->i_cdev) {
		f = dentry_open(path, O_RDONLY | O_NONBLOCK, current_cred());
		if (!IS_ERR(f))
			fput(f);
	}
	return READ_ONCE(inode->i_cdev);
}

bool vgpu_cdev_present(const struct path *path)
{
	return cdev_of(path) != NULL;
}

struct vgpu_cdev_hook *vgpu_cdev_hook_install(const struct path *path, int kind)
{
	struct vgpu_cdev_hook *h;
	struct vgpu_hook_fops *w;
	struct cdev *cdev = cdev_of(path);
	int i, free = -1;

	if (!cdev || !cdev->ops)
		return ERR_PTR(-ENODEV);
	mutex_lock(&hooks_lock);
	for (i = 0; i < VGPU_MAX_HOOKS; i++) {
		if (hooks[i] && hooks[i]->cdev == cdev) {
			mutex_unlock(&hooks_lock);
			return NULL;
		}
		if (!hooks[i] && free < 0)
			free = i;
	}
	h = ERR_PTR(-ENOSPC);
	if (free < 0)
		goto out;
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	w = kzalloc(sizeof(*w), GFP_KERNEL);
	if (!h || !w) {
		kfree(h);
		kfree(w);
		h = ERR_PTR(-ENOMEM);
		goto out;
	}
	/*
	 * The driver stays while its cdev is hooked: vgpu writes the cdev's
	 * ops back at unload. (nvidia is pinned by vgpu's use of its symbols;
	 * nvidia-uvm, whose symbols vgpu does not use, by this.)
	 */
	if (!try_module_get(cdev->ops->owner)) {
		kfree(h);
		kfree(w);
		h = ERR_PTR(-ENODEV);
		goto out;
	}
	h->cdev = cdev;
	h->orig = cdev->ops;
	h->kind = kind;
	h->wrap = w;
	w->fops = *cdev->ops;
	w->fops.owner = THIS_MODULE;
	w->fops.open = vgpu_hook_open;
	w->hook = h;
	/* Readers take the pointer once (chrdev_open): a word store. */
	smp_store_release(&cdev->ops, &w->fops);
	hooks[free] = h;
out:
	mutex_unlock(&hooks_lock);
	return h;
}

void vgpu_cdev_hook_remove(struct vgpu_cdev_hook *h)
{
	struct vgpu_hook_fops *w = h->wrap;
	int i;

	mutex_lock(&hooks_lock);
	for (i = 0; i < VGPU_MAX_HOOKS; i++)
		if (hooks[i] == h)
			hooks[i] = NULL;
	mutex_unlock(&hooks_lock);
	/*
	 * An open may have read cdev->ops (the copy) and not yet taken its
	 * owner: turn the copy into the driver's own operations first, the
	 * open before the owner, so that such an open either fails to pin
	 * vgpu (which is going: -ENXIO) or pins the driver and runs the
	 * driver's open. Then give the cdev the driver's ops back. The copy
	 * is never freed, since nothing tells when the last such reader is
	 * gone (chrdev_open holds no lock there); it is one small allocation
	 * per device per unload.
	 */
	WRITE_ONCE(w->hook, NULL);
	WRITE_ONCE(w->fops.open, h->orig->open);
	smp_wmb();
	WRITE_ONCE(w->fops.owner, h->orig->owner);
	smp_store_release(&h->cdev->ops, h->orig);
	kmemleak_not_leak(w);
	module_put(h->orig->owner);
	kfree(h);
}

/*
 * nvidia-uvm registers its device at load and makes no node (nvidia-modprobe
 * does): loaded after vgpu, its device would not be taken over, and a
 * container could reach it directly (mknod of its numbers). So while vgpu
 * is loaded, nvidia-uvm's load is refused; the softdep of vgpu's modprobe
 * configuration loads it first. (Loaded before vgpu, it is pinned by its
 * hook.)
 */
static int vgpu_module_notify(struct notifier_block *nb, unsigned long action, void *data)
{
	struct module *mod = data;

	if (action != MODULE_STATE_COMING || strcmp(mod->name, "nvidia_uvm"))
		return NOTIFY_DONE;
	pr_err("vgpu: refusing to load nvidia_uvm after vgpu, which could not take over its device: unload vgpu, load nvidia-uvm, then vgpu\n");
	return notifier_from_errno(-EBUSY);
}

static struct notifier_block vgpu_module_nb = {
	.notifier_call = vgpu_module_notify,
};

int vgpu_cdev_watch_modules(void)
{
	return register_module_notifier(&vgpu_module_nb);
}

void vgpu_cdev_unwatch_modules(void)
{
	unregister_module_notifier(&vgpu_module_nb);
}
