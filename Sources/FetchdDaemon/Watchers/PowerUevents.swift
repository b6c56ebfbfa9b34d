import CPosixShim

#if canImport(Glibc)
import Glibc
#endif

/// The kernel's word that a power supply changed: its uevents (`change@.../power_supply/AC`),
/// broadcast on a netlink socket as udev receives them. On the real `/sys/class/power_supply`
/// this is how a plug, an unplug or a new battery level shows; the attribute files themselves
/// change without any inotify event. A process may listen without privileges; as udev does,
/// only the kernel's own messages count.
enum PowerUevents {
    /// The socket, or nil (and why) when netlink is not there (a sandbox without AF_NETLINK).
    static func open() -> (fd: Int32?, problem: String?) {
        let fd = fetchd_uevent_socket()
        return fd >= 0 ? (fd, nil) : (nil, String(cString: strerror(errno)))
    }

    /// Reads every pending uevent; whether one was about a power supply, or some were lost
    /// (the socket's buffer overran: a power change may be among them).
    static func drain(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 8 * 1024)
        var power = false
        while true {
            let count = buffer.withUnsafeMutableBytes { fetchd_uevent_receive(fd, $0.baseAddress, UInt($0.count)) }
            if count < 0 {
                if errno == EINTR { continue }
                return power || errno == ENOBUFS
            }
            if count > 0, isPowerSupply(buffer[0..<count]) { power = true }
        }
    }

    /// Whether a uevent (`ACTION@DEVPATH` then `KEY=VALUE` fields, each NUL-terminated) belongs
    /// to the power_supply subsystem.
    static func isPowerSupply(_ datagram: ArraySlice<UInt8>) -> Bool {
        datagram.split(separator: 0).contains { $0.elementsEqual("SUBSYSTEM=power_supply".utf8) }
    }
}
