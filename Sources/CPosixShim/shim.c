#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include "CPosixShim.h"

int fetchd_syncfs(int fd) {
    return syncfs(fd);
}

int fetchd_boottime_timer(void) {
    return timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK);
}

int fetchd_boottime_timer_arm(int fd, long long nanoseconds) {
    if (nanoseconds < 1) nanoseconds = 1;
    struct itimerspec value = {
        .it_interval = {0, 0},
        .it_value = {(time_t)(nanoseconds / 1000000000LL), (long)(nanoseconds % 1000000000LL)},
    };
    return timerfd_settime(fd, 0, &value, NULL);
}

int fetchd_event_counter(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int fetchd_nice_this_thread(int nice) {
    // On Linux, PRIO_PROCESS with a thread id sets that thread's nice value alone.
    return setpriority(PRIO_PROCESS, (id_t)gettid(), nice);
}

int fetchd_name_this_thread(const char *name) {
    char cut[16];
    strncpy(cut, name, sizeof cut - 1);
    cut[sizeof cut - 1] = '\0';
    return pthread_setname_np(pthread_self(), cut);
}

int fetchd_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int fetchd_uevent_socket(void) {
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
    if (fd < 0) return -1;
    struct sockaddr_nl address = { .nl_family = AF_NETLINK, .nl_groups = 1 };
    if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

long fetchd_uevent_receive(int fd, void *buffer, unsigned long length) {
    struct sockaddr_nl sender;
    socklen_t size = sizeof sender;
    ssize_t count = recvfrom(fd, buffer, length, 0, (struct sockaddr *)&sender, &size);
    if (count < 0) return -1;
    return sender.nl_pid == 0 ? (long)count : 0;
}

// Why not posix_spawn or swift-subprocess: posix_spawn cannot switch users, and swift-subprocess
// 1.0.2 opens descriptors of its own around the spawn (an error pipe, the child's pipes, a pidfd)
// and stops the process (fatalError) or never sees the child exit when one of them cannot be
// opened; at a file-descriptor limit that took fetchd down. This opens none.
//
// vfork, as glibc's posix_spawn does: the child borrows fetchd's memory until it execs, so it
// costs no copy of a large address space, and the calling thread waits until then. The rules
// that come with it: the child only makes async-signal-safe calls, never returns from this
// function, and sets ids with raw system calls (glibc's setuid would try to signal fetchd's
// other threads, which the child does not have). All signals stay blocked from before the vfork
// until the child has put every handler back to its default, so no fetchd signal handler can
// run on the borrowed memory.
pid_t fetchd_spawn(const char *path, char *const argv[], char *const envp[], int output_fd,
                   unsigned long long nofile_soft, const char *cgroup_procs,
                   int switch_user, uid_t uid, gid_t gid, const gid_t *groups, int group_count,
                   int *failed_step) {
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    volatile int child_errno = 0;  // written by the child, in the memory it borrows
    volatile int child_step = FETCHD_SPAWN_STEP_OTHER;
    pid_t pid = vfork();
    if (pid == 0) {
        struct sigaction standard = { .sa_handler = SIG_DFL };
        for (int number = 1; number < NSIG; number++) {
            struct sigaction current;
            if (sigaction(number, NULL, &current) == 0 && current.sa_handler != SIG_DFL) {
                sigaction(number, &standard, NULL);
            }
        }
        if (setsid() < 0 || dup2(output_fd, 1) < 0 || dup2(output_fd, 2) < 0) goto failed;
        // Every other descriptor closed (close_range since Linux 5.9; else one by one). The child
        // has its own copy of fetchd's descriptor table (vfork does not share it), so from here
        // it has room whatever fetchd holds: stdin is opened now, where it lands on 0.
        if (syscall(SYS_close_range, 3U, ~0U, 0) != 0) {
            struct rlimit limit;
            long most = getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY ? (long)limit.rlim_cur : 65536;
            for (long fd = 3; fd < most; fd++) close((int)fd);
        }
        close(0);
        if (open("/dev/null", O_RDONLY) != 0) goto failed;
        if (cgroup_procs != NULL) {
            // Into its own control group before anything else it runs, while still fetchd's user
            // (moving a process takes write access to the cgroups' common ancestor, fetchd's own).
            child_step = FETCHD_SPAWN_STEP_CGROUP;
            int procs = open(cgroup_procs, O_WRONLY | O_CLOEXEC);
            if (procs < 0) goto failed;
            // "0" is the writing process itself: the child joins before it runs the program.
            if (write(procs, "0\n", 2) != 2) {
                if (errno == 0) errno = EIO;  // a short write sets none
                close(procs);
                goto failed;
            }
            close(procs);
            child_step = FETCHD_SPAWN_STEP_OTHER;
        }
        if (nofile_soft > 0) {
            struct rlimit limit;
            if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && nofile_soft < limit.rlim_cur) {
                limit.rlim_cur = (rlim_t)nofile_soft;
                setrlimit(RLIMIT_NOFILE, &limit);
            }
        }
        if (switch_user) {
            if (syscall(SYS_setgroups, (size_t)group_count, groups) != 0) goto failed;
            if (syscall(SYS_setresgid, gid, gid, gid) != 0) goto failed;
            if (syscall(SYS_setresuid, uid, uid, uid) != 0) goto failed;
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(path, argv, envp);
    failed:
        child_errno = errno;
        _exit(127);
    }
    int spawn_errno = pid < 0 ? errno : child_errno;
    if (failed_step != NULL) *failed_step = pid < 0 ? FETCHD_SPAWN_STEP_OTHER : child_step;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (pid < 0) return -spawn_errno;
    if (spawn_errno != 0) {
        // It never ran: reap it here, so nobody waits for a program that was never there.
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
        return -spawn_errno;
    }
    return pid;
}
