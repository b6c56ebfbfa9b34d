@testable import FetchdDaemon
import CPosixShim
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The kernel uevent socket the power watcher listens on: a real netlink socket, sent a uevent
/// the way the kernel broadcasts them (group 1), by Python as root (sending to that group takes
/// CAP_NET_ADMIN). The device is a made-up one, so a udev that hears it finds nothing to do.
struct PowerUeventsTests {
    @Test func aPowerSupplyUeventIsToldFromOthers() {
        func datagram(_ fields: [String]) -> ArraySlice<UInt8> { ArraySlice(fields.flatMap { Array($0.utf8) + [0] }) }
        #expect(PowerUevents.isPowerSupply(datagram(["change@/devices/LNXSYSTM:00/ACPI0003:00/power_supply/AC",
                                                     "ACTION=change", "SUBSYSTEM=power_supply", "POWER_SUPPLY_ONLINE=1"])))
        #expect(!PowerUevents.isPowerSupply(datagram(["add@/devices/pci0000:00/usb1/1-1", "ACTION=add", "SUBSYSTEM=usb"])))
        #expect(!PowerUevents.isPowerSupply(datagram(["SUBSYSTEM=power_supply_extra"])))
    }

    /// Only the kernel's own uevents count. A real one is made by writing "change" to a device's
    /// `uevent` file (here `lo`'s: subsystem net, so not a power change, but heard); one sent by
    /// Python as root to the same group (which takes CAP_NET_ADMIN), about a power supply, is
    /// dropped as udev drops such messages. The device is a made-up one, so a udev that hears
    /// it finds nothing to do.
    @Test(.enabled(if: getuid() == 0 && access("/sys/class/net/lo/uevent", W_OK) == 0, "needs root and a writable sysfs"))
    func onlyTheKernelsUeventsCount() async throws {
        let (opened, problem) = PowerUevents.open()
        let fd = try #require(opened, "\(problem ?? "")")
        defer { close(fd) }
        _ = PowerUevents.drain(fd)  // whatever the machine sent before: gone
        try "change".write(toFile: "/sys/class/net/lo/uevent", atomically: false, encoding: .utf8)
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        #expect(poll(&descriptor, 1, 5000) == 1, "the kernel's uevent did not arrive")
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = buffer.withUnsafeMutableBytes { fetchd_uevent_receive(fd, $0.baseAddress, UInt($0.count)) }
        #expect(count > 0, "the kernel's uevent was dropped")
        #expect(count <= 0 || buffer[0..<count].split(separator: 0).contains { $0.elementsEqual("SUBSYSTEM=net".utf8) })
        _ = PowerUevents.drain(fd)

        let script = """
            import socket
            s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15)
            fields = ["change@/devices/fetchd-test-\(getpid())/power_supply/FETCHD_TEST", "ACTION=change", "SUBSYSTEM=power_supply"]
            s.sendto(b"".join(f.encode() + b"\\0" for f in fields), (0, 1))
            """
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", script]
        try python.run()
        python.waitUntilExit()
        #expect(python.terminationStatus == 0)
        #expect(poll(&descriptor, 1, 5000) == 1, "the sent uevent did not arrive")
        #expect(!PowerUevents.drain(fd), "a power_supply uevent from a process, not the kernel, must not count")
    }
}
