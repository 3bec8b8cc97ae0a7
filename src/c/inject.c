// SPDX-License-Identifier: GPL-2.0
/*
 * vgpu's fault-injection points (see inject.h). ALLOW_ERROR_INJECTION lists
 * each in the module's error-injection table, so that
 * /sys/kernel/debug/fail_function can make it return an errno on a kernel
 * with CONFIG_FAIL_FUNCTION; elsewhere they cost a call returning 0.
 * noinline keeps a function entry for the kprobe that overrides them.
 */
#include <linux/compiler.h>
#include <linux/error-injection.h>

#include "inject.h"

noinline int vgpu_inject_driver_call(void)
{
	return 0;
}
ALLOW_ERROR_INJECTION(vgpu_inject_driver_call, ERRNO);

noinline int vgpu_inject_record(void)
{
	return 0;
}
ALLOW_ERROR_INJECTION(vgpu_inject_record, ERRNO);
