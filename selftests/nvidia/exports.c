// SPDX-License-Identifier: GPL-2.0
/*
 * Symbol exports of the NVIDIA driver double. Rust modules cannot export
 * symbols to other modules yet, so the Rust crate defines the function and
 * this file exports it under the name nvidia.ko uses.
 */
#include <linux/export.h>
#include <linux/mm.h>

struct nvidia_rm_ops;
unsigned int nvidia_get_rm_ops(struct nvidia_rm_ops *ops);
EXPORT_SYMBOL_GPL(nvidia_get_rm_ops);

/* page_address() is a macro: the Rust crate calls it through this. */
void *nv_double_page_address(struct page *page);
void *nv_double_page_address(struct page *page)
{
	return page_address(page);
}
