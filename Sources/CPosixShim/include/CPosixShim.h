// Linux calls that glibc declares only under _GNU_SOURCE, which Swift's Glibc module does not set.
#ifndef FETCHD_CPOSIX_SHIM_H
#define FETCHD_CPOSIX_SHIM_H

// The umbrella header of the module (SwiftPM's generated module map names it): what it does not
// include, Swift does not see.
#include "fetchd_commit.h"

/// syncfs(2): flushes the whole file system holding `fd`. Returns 0, or -1 with errno set.
int fetchd_syncfs(int fd);

/// Gives the calling thread (only it, not the process) the nice value `nice`, so it runs on
/// CPU time nothing else wants. Returns 0, or -1 with errno set.
int fetchd_nice_this_thread(int nice);

/// Names the calling thread (the kernel's `comm`, at most 15 bytes; longer names are cut).
/// Returns 0, or an errno value.
int fetchd_name_this_thread(const char *name);

#include <sys/types.h>

/// A close-on-exec timerfd on CLOCK_BOOTTIME, the clock of Swift's `ContinuousClock` (it counts
/// time suspended; a wall-clock step moves nothing). Returns it, or -1 with errno set.
int fetchd_boottime_timer(void);

/// Arms `fd` (from `fetchd_boottime_timer`) to expire once, `nanoseconds` from now (at least
/// 1: zero would disarm it). Returns 0, or -1 with errno set.
int fetchd_boottime_timer_arm(int fd, long long nanoseconds);

/// A close-on-exec, non-blocking eventfd counter at 0. Returns it, or -1 with errno set.
int fetchd_event_counter(void);

/// pipe2(2) with O_CLOEXEC: both ends closed at exec, atomically. Returns 0, or -1 with errno set.
int fetchd_pipe_cloexec(int fds[2]);

/// A non-blocking, close-on-exec netlink socket bound to the kernel's uevent broadcasts
/// (NETLINK_KOBJECT_UEVENT, group 1), as udev listens. Returns it, or -1 with errno set.
int fetchd_uevent_socket(void);

/// Receives one datagram from a uevent socket into `buffer`: its length; 0 for one not sent by
/// the kernel (dropped: anyone may send to the socket); -1 with errno set (EAGAIN: none left).
long fetchd_uevent_receive(int fd, void *buffer, unsigned long length);

/// Starts the program at `path` as a child, the way an exec handler's program must start, and
/// without opening a single file descriptor in fetchd (so it cannot fail half-way for want of
/// one): in a new session (its own process group), stdin from /dev/null, stdout and stderr to
/// `output_fd`, no other descriptor, every signal at its default and unblocked, its soft
/// RLIMIT_NOFILE set to `nofile_soft` (0: fetchd's); with `switch_user`, as `uid`/`gid` with
/// exactly `groups`; with `cgroup_procs` (a control group's `cgroup.procs` path), moved into that
/// group first. Returns the child's pid, or -errno when it could not start (the child's own
/// failure before exec included: execve's ENOENT, setuid's EPERM...), and then sets
/// `*failed_step` (when not NULL) to the step that failed.
pid_t fetchd_spawn(const char *path, char *const argv[], char *const envp[], int output_fd,
                   unsigned long long nofile_soft, const char *cgroup_procs,
                   int switch_user, uid_t uid, gid_t gid, const gid_t *groups, int group_count,
                   int *failed_step);

/// `fetchd_spawn`'s failed steps: joining the control group, or anything else.
enum { FETCHD_SPAWN_STEP_OTHER = 0, FETCHD_SPAWN_STEP_CGROUP = 1 };

/// A close-on-exec, non-blocking SOCK_SEQPACKET socket connected to the Unix socket at `path`
/// (fetchd-runas's). Returns it, or -1 with errno set (ENAMETOOLONG for a path that does not fit).
int fetchd_seqpacket_connect(const char *path);

/// Sends one message of `length` bytes on `socket`, with the descriptor `fd` attached
/// (SCM_RIGHTS) when it is not -1. Returns the bytes sent, or -1 with errno set.
long fetchd_send_with_descriptor(int socket, const void *bytes, unsigned long length, int fd);

/// Receives one message into `buffer` (`MSG_DONTWAIT` when `wait` is 0) and the descriptor sent
/// with it, close-on-exec, in `*fd` (-1 when none; any further ones are closed). Returns its
/// length (0: the peer closed), or -1 with errno set; a message longer than `length` is an error
/// (EMSGSIZE), never cut silently.
long fetchd_receive_with_descriptor(int socket, void *buffer, unsigned long length, int wait, int *fd);

/// The uid of the process at the other end of the Unix socket `socket` (SO_PEERCRED), or -1.
long long fetchd_peer_uid(int socket);

/// setfsuid(2) and setfsgid(2) for the calling thread: file-system checks as `uid`/`gid`.
/// Return the previous ids.
int fetchd_set_filesystem_ids(uid_t uid, gid_t gid);

#include <stdbool.h>

/// Sets Swift concurrency's global-executor hook (`swift_task_enqueueGlobal_hook`) to `hook`, a
/// function with Swift's calling convention taking the job and the original enqueue function,
/// unless a hook is already set. Returns whether it was set. See executor_hook.c for why not
/// through dlsym.
bool fetchd_install_enqueue_global_hook(void *hook);

#endif
