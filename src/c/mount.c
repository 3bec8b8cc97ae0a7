// SPDX-License-Identifier: GPL-2.0
/* A private, nodev mount for the real driver's nodes (see mount.h). */
#include <linux/dcache.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/path.h>

#include "mount.h"

int vgpu_path_make_private(struct path *path)
{
	struct vfsmount *m = clone_private_mount(path);

	if (IS_ERR(m))
		return PTR_ERR(m);
	m->mnt_flags |= MNT_NODEV;
	mntput(path->mnt);
	path->mnt = m;
	return 0;
}

void vgpu_path_put_private(struct path *path)
{
	dput(path->dentry);
	kern_unmount(path->mnt);
}
