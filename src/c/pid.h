/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Processes by their struct pid, for vgpu's process views (src/kapi/pid.rs):
 * a reference on the calling thread group's pid, its number on the host and
 * in the caller's PID namespace, whether it still has a task, and the
 * caller's command name. 7.3's kernel crate has no type for struct pid.
 */
#ifndef VGPU_C_PID_H
#define VGPU_C_PID_H

#include <linux/types.h>

struct pid;

/* A reference on the calling thread group's pid (PIDTYPE_TGID); NULL if
 * the task is exiting. Released with vgpu_pid_put(). */
struct pid *vgpu_pid_current_tgid(void);

/* Drops a reference taken by vgpu_pid_current_tgid() or vgpu_pid_get(). */
void vgpu_pid_put(struct pid *pid);

/* Takes another reference on pid. */
void vgpu_pid_get(struct pid *pid);

/* The pid's number in the initial PID namespace (the host's). */
int vgpu_pid_host_nr(struct pid *pid);

/* The pid's number in the caller's PID namespace; 0 if the caller cannot
 * see it there (pid_vnr()). */
int vgpu_pid_vnr(struct pid *pid);

/* Whether a thread group still has this pid (it has not been reaped). */
bool vgpu_pid_alive(struct pid *pid);

/* The caller's command name, NUL-padded (TASK_COMM_LEN = 16 bytes). */
void vgpu_current_comm(char out[16]);

#endif
