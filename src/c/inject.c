// SPDX-License-Identifier: GPL-2.0
/*
 * vgpu's fault-injection points (see inject.h). ALLOW_ERROR_INJECTION lists
 * each in the module's error-injection table, so that
 * /sys/kernel/debug/fail_function can make it return an errno on a kernel
 * with CONFIG_FAIL_FUNCTION; elsewhere they cost a call returning 0.
 * noinline keeps a function entry for the kprobe that overrides them.
 *
 * notrace: with no ftrace call site at its entry, fail_function's kprobe on
 * each is a breakpoint, whose handler the fuzz suite was written for
 * (selftests/vmtest/src/fuzz/inject.rs). Since the debug kernel has the
 * function tracer, the kprobe had been an ftrace one, and the long fuzz at
 * 6175f74 (seed 62883267885) oopsed 19 s after arming it: vgpu's scheduler
 * thread, calling vgpu_inject_driver_call, continued at address 0.
 */
#include <linux/compiler.h>
#include <linux/error-injection.h>

#include "inject.h"

noinline notrace int vgpu_inject_driver_call(void)
{
	return 0;
}
ALLOW_ERROR_INJECTION(vgpu_inject_driver_call, ERRNO);

noinline notrace int vgpu_inject_record(void)
{
	return 0;
}
ALLOW_ERROR_INJECTION(vgpu_inject_record, ERRNO);
