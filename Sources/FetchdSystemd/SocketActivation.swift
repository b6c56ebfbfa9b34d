import CSystemdShim

#if canImport(Glibc)
import Glibc
#endif

/// Sockets passed by systemd socket activation (`fetchd.socket`): `$LISTEN_FDS` file
/// descriptors starting at 3, for this process only (`$LISTEN_PID`).
public enum SocketActivation {
    /// The first passed socket, if systemd passed any; the environment variables are cleared so
    /// child processes do not think the sockets are theirs.
    public static func takeListeningSocket() -> Int32? {
        let count = sd_listen_fds(1)
        guard count > 0 else { return nil }
        let fd = SD_LISTEN_FDS_START
        // Exec handlers must not inherit the control socket.
        _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
        return fd
    }
}
