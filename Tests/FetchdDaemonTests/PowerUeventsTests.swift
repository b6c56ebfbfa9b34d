@testable import FetchdDaemon
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

    @Test(.enabled(if: getuid() == 0, "needs root to send to the kernel's uevent group"))
    func theSocketHearsABroadcastPowerSupplyUevent() async throws {
        let (opened, problem) = PowerUevents.open()
        let fd = try #require(opened, "\(problem ?? "")")
        defer { close(fd) }
        _ = PowerUevents.drain(fd)  // whatever the machine sent before: gone
        for (subsystem, expected) in [("usb", false), ("power_supply", true)] {
            let script = """
                import socket, sys
                s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15)
                fields = ["change@/devices/fetchd-test-\(getpid())/FETCHD_TEST", "ACTION=change", "SUBSYSTEM=" + sys.argv[1]]
                s.sendto(b"".join(f.encode() + b"\\0" for f in fields), (0, 1))
                """
            let python = Process()
            python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            python.arguments = ["python3", "-c", script, subsystem]
            try python.run()
            python.waitUntilExit()
            #expect(python.terminationStatus == 0)
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            #expect(poll(&descriptor, 1, 5000) == 1, "no uevent arrived")
            #expect(PowerUevents.drain(fd) == expected, "\(subsystem)")
        }
    }
}
