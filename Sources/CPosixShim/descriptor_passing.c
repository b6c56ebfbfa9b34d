// Messages with a descriptor attached, on fetchd-runas's SOCK_SEQPACKET socket: one message is
// one request or one reply, with its boundaries kept, and an opened file passed as itself.
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "CPosixShim.h"

int fetchd_seqpacket_connect(const char *path) {
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof address.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(address.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    // Connected blocking (a Unix socket connects at once or fails), then non-blocking for reads.
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

long fetchd_send_with_descriptor(int socket, const void *bytes, unsigned long length, int fd) {
    struct iovec part = { .iov_base = (void *)bytes, .iov_len = length };
    union { char buffer[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } control;
    struct msghdr message = { .msg_iov = &part, .msg_iovlen = 1 };
    if (fd >= 0) {
        memset(&control, 0, sizeof control);
        message.msg_control = control.buffer;
        message.msg_controllen = sizeof control.buffer;
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(header), &fd, sizeof(int));
    }
    ssize_t sent;
    do { sent = sendmsg(socket, &message, MSG_NOSIGNAL); } while (sent < 0 && errno == EINTR);
    return (long)sent;
}

long fetchd_receive_with_descriptor(int socket, void *buffer, unsigned long length, int wait, int *fd) {
    *fd = -1;
    struct iovec part = { .iov_base = buffer, .iov_len = length };
    // Room for a few descriptors: a peer that sends more must not leave them open here.
    union { char buffer[CMSG_SPACE(8 * sizeof(int))]; struct cmsghdr align; } control;
    struct msghdr message = { .msg_iov = &part, .msg_iovlen = 1,
                              .msg_control = control.buffer, .msg_controllen = sizeof control.buffer };
    ssize_t received;
    do {
        received = recvmsg(socket, &message, MSG_CMSG_CLOEXEC | (wait ? 0 : MSG_DONTWAIT));
    } while (received < 0 && errno == EINTR);
    if (received < 0) return -1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t index = 0; index < count; index++) {
            int passed;
            memcpy(&passed, CMSG_DATA(header) + index * sizeof(int), sizeof(int));
            if (*fd < 0) *fd = passed; else close(passed);
        }
    }
    if (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        if (*fd >= 0) close(*fd);
        *fd = -1;
        errno = EMSGSIZE;
        return -1;
    }
    return (long)received;
}

long long fetchd_peer_uid(int socket) {
    struct ucred credentials;
    socklen_t size = sizeof credentials;
    if (getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) return -1;
    return (long long)credentials.uid;
}

int fetchd_set_filesystem_ids(uid_t uid, gid_t gid) {
    setfsgid(gid);
    return setfsuid(uid);
}
