import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The boot script, cgroup clean-up and process lookups behind `SystemdNamespace`.
extension SystemdNamespace {
    /// How the namespace sees the host's system folders.
    enum Root {
        /// `/etc` is a private copy and systemd sees only the units tests install.
        case privateCopyOfEtc
        /// `/usr`, `/etc` and `/var` are overlays whose upper layers are tmpfs, so dpkg and apt can
        /// install, upgrade and purge a package without writing to the host; systemd also reads
        /// `/lib/systemd/system` (an empty tmpfs at boot, so only what is installed there shows);
        /// each folder of `hidden` is covered by an empty read-only one (e.g. the Swift toolchain,
        /// so that an installed program that needs it fails).
        case overlays(hidden: [String])
    }

    /// The host PIDs of every process in the PID namespace `namespace` (as in `pidNamespace`).
    static func processes(inNamespace namespace: String) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { pidNamespace(of: $0) == namespace }
    }

    /// The PID namespace of `pid` (`pid:[inode]`), or nil when it is gone.
    static func pidNamespace(of pid: pid_t) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/pid")
    }

    /// Run by `/bin/sh -c` with the paths of `unshare` and boot.sh, the niceness and more `unshare`
    /// options (`--net`, or nothing): starts the namespace, then waits
    /// for end of file on stdin (the lifeline) to kill PID 1 — and so the whole namespace — and reap it.
    static let launcherScript = """
        nice -n "$3" "$1" --kill-child=SIGKILL --pid --fork --mount --mount-proc $4 --propagation private /bin/sh "$2" </dev/null &
        U=$!
        read -r _ || true
        kill -KILL $(cat /proc/$U/task/$U/children 2>/dev/null) 2>/dev/null
        i=0
        while [ $i -lt 20 ] && grep -q '^[0-9]* (unshare) [^Z]' /proc/$U/stat 2>/dev/null; do sleep 0.05; i=$((i+1)); done
        if grep -q '^[0-9]* (unshare) [^Z]' /proc/$U/stat 2>/dev/null; then kill -KILL $U; fi
        wait
        """

    /// The script run as PID 1 of the new namespaces; it ends by exec'ing systemd.
    func bootScript() -> String {
        let units = Self.journalUnits + (dbus ? ["dbus.socket", "dbus.service"] : [])
        let stubs = ["sysinit", "basic", "sockets", "timers", "paths", "slices", "local-fs", "shutdown",
                     "network", "network-online", "multi-user", "time-set", "time-sync"]
        let binds = privateDirectories.map { path -> String in
            let host = hostDirectory(for: path)
            try? FileManager.default.createDirectory(atPath: host, withIntermediateDirectories: true)
            return "mkdir -p '\(path)' && mount --bind '\(host)' '\(path)'"
        }
        return """
            #!/bin/sh
            set -eu
            # Own cgroup, so that systemd roots its unit tree there and not at the hierarchy's root
            # (retried: removeStaleCgroups() in another test may remove it before we join it).
            for h in \(HostProcess.systemdCgroupMounts().map { "'\($0)'" }.joined(separator: " ")); do
                for try in 1 2 3 4 5; do
                    if mkdir -p "$h/\(cgroupName)" && echo 0 > "$h/\(cgroupName)/cgroup.procs"; then break; fi
                done
                grep -q ":/\(cgroupName)$" /proc/self/cgroup
            done
            \(networkSetup())
            # Private state: nothing systemd or a unit writes here reaches the host.
            mount -t tmpfs -o mode=755 tmpfs /run
            \(rootMounts())
            for d in /etc/systemd/system /var/tmp /var/lib/systemd /var/log/journal; do
                if [ -d "$d" ]; then mount -t tmpfs -o mode=755 tmpfs "$d"; fi
            done
            if [ -d /var/tmp ]; then chmod 1777 /var/tmp; fi
            for d in /var/lib/private /var/cache/private /var/log/private; do
                mkdir -p -m 0700 "$d" && mount -t tmpfs -o mode=700 tmpfs "$d"
            done
            # The service's own folders, bind mounts of the host temp folder (mount points are created
            # on the host when missing, empty).
            \(binds.joined(separator: "\n"))
            # The only units systemd can see: the journal (and D-Bus), stub targets, what tests install.
            U=/run/systemd/system
            mkdir -p $U /run/fetchd-test/no-generators
            for u in \(units.joined(separator: " ")); do
                if [ -f /lib/systemd/system/$u ]; then cp /lib/systemd/system/$u $U/; fi
            done
            for t in \(stubs.joined(separator: " ")); do
                printf '[Unit]\\nDescription=%s (fetchd test stub)\\nDefaultDependencies=no\\n' $t > $U/$t.target
            done
            echo 'RefuseManualStart=yes' >> $U/shutdown.target
            \(unitPathMounts())
            cat > $U/fetchd-test.target <<'EOF'
            [Unit]
            Description=fetchd test target
            Requires=systemd-journald.service \(dbus ? "dbus.socket" : "")
            After=systemd-journald.service \(dbus ? "dbus.socket" : "")
            AllowIsolate=yes
            EOF
            exec env container=fetchd-test SYSTEMD_UNIT_PATH=/etc/systemd/system:$U\(unitPathTail) \\
                SYSTEMD_GENERATOR_PATH=/run/fetchd-test/no-generators \\
                SYSTEMD_ENVIRONMENT_GENERATOR_PATH=/run/fetchd-test/no-generators \\
                \(Self.systemdBinary) --system --unit=fetchd-test.target --log-target=journal --log-level=info

            """
    }

    /// With `network`, the boot script's lines that bring up the private `lo` with its addresses.
    private func networkSetup() -> String {
        guard let addresses = network else { return "# The host's network." }
        return "ip link set lo up" + addresses.map { "\nip addr add \($0) dev lo" }.joined()
    }

    /// The boot script's lines that make `/etc` private, or lay the overlays of `Root.overlays`.
    private func rootMounts() -> String {
        switch root {
        case .privateCopyOfEtc:
            return """
                # /etc is a private copy (3 MB), so systemd-sysusers and the like cannot touch the host's users.
                mkdir -p /run/fetchd-test/etc && cp -a /etc/. /run/fetchd-test/etc/ && mount --bind /run/fetchd-test/etc /etc
                """
        case .overlays(let hidden):
            let covers = hidden.map { "if [ -d '\($0)' ]; then mount -t tmpfs -o ro,mode=755 tmpfs '\($0)'; fi" }
            // /lib is a link into /usr on Debian 12; /var holds dpkg's and apt's databases, caches and logs.
            return """
                # Writes to /usr, /etc and /var land in tmpfs upper layers: dpkg, apt and the
                # package's scripts change nothing on the host. That holds only where /bin, /sbin
                # and /lib are links into /usr (merged /usr, as on Debian 12).
                for d in /bin /sbin /lib /lib64; do
                    if [ -e "$d" ] && [ ! -L "$d" ]; then echo "$d is not a link into /usr: not overlaid" >&2; exit 1; fi
                done
                for d in usr etc var; do
                    o=/run/fetchd-test/overlay/$d
                    mkdir -p $o/upper $o/work
                    mount -t overlay overlay -o lowerdir=/$d,upperdir=$o/upper,workdir=$o/work /$d
                done
                \(covers.joined(separator: "\n"))
                """
        }
    }

    /// With `Root.overlays`, an empty tmpfs over `/lib/systemd/system` (laid after the journal's
    /// and D-Bus's units were copied) hides the host's units; a package installs its own there.
    private func unitPathMounts() -> String {
        guard case .overlays = root else { return "" }
        return "mount -t tmpfs -o mode=755 tmpfs /usr/lib/systemd/system"
    }

    /// What follows the private folders on systemd's unit path.
    private var unitPathTail: String {
        guard case .overlays = root else { return "" }
        return ":/lib/systemd/system"
    }

    /// Removes this namespace's cgroups, deepest first (retrying while dead tasks are reaped).
    func removeCgroups() {
        for hierarchy in HostProcess.systemdCgroupMounts() + HostProcess.otherCgroupMounts() {
            Self.removeCgroupTree(hierarchy + "/" + cgroupName, retryingFor: 3)
        }
    }

    /// Removes what namespaces whose owner died without `shutdown()` (killed test runs) left: their
    /// `fetchd-sd-ID` cgroups, then their `fetchd-systemd-ID-*` temp folders once a minute old.
    static func removeLeftovers() {
        removeStaleCgroups()
        let temp = NSTemporaryDirectory(), tracking = HostProcess.systemdCgroupMounts()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temp)) ?? [] where name.hasPrefix("fetchd-systemd-") {
            let id = name.dropFirst("fetchd-systemd-".count).prefix(8)
            guard name.count == "fetchd-systemd-".count + 8 + 7, id.allSatisfy(\.isHexDigit),
                  name.dropFirst("fetchd-systemd-".count + 8).first == "-" else { continue }
            let path = temp + "/" + name
            let modified = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate]) as? Date ?? Date()
            let alive = tracking.contains { FileManager.default.fileExists(atPath: $0 + "/fetchd-sd-" + id) }
            if !alive, modified < Date().addingTimeInterval(-60) { try? FileManager.default.removeItem(atPath: path) }
        }
    }

    /// Removes the `fetchd-sd-*` cgroups with no process left in the trees systemd tracks (a live
    /// namespace's PID 1 is in one). A boot.sh that loses its new cgroup to this race retries.
    static func removeStaleCgroups() {
        let tracking = HostProcess.systemdCgroupMounts(), all = tracking + HostProcess.otherCgroupMounts()
        let names = Set(all.flatMap { hierarchy in
            ((try? FileManager.default.contentsOfDirectory(atPath: hierarchy)) ?? []).filter { $0.hasPrefix("fetchd-sd-") }
        })
        for name in names {
            let alive = tracking.contains { hierarchy in
                cgroupDirectories(under: hierarchy + "/" + name).contains {
                    !((try? String(contentsOfFile: $0 + "/cgroup.procs", encoding: .utf8)) ?? "").isEmpty
                }
            }
            if !alive { all.forEach { removeCgroupTree($0 + "/" + name, retryingFor: 0) } }
        }
    }

    private static func cgroupDirectories(under root: String) -> [String] {
        guard FileManager.default.fileExists(atPath: root) else { return [] }
        return [root] + (FileManager.default.subpaths(atPath: root) ?? []).map { root + "/" + $0 }.filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: $0, isDirectory: &isDirectory) && isDirectory.boolValue
        }
    }

    private static func removeCgroupTree(_ root: String, retryingFor seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while FileManager.default.fileExists(atPath: root) {
            for path in cgroupDirectories(under: root).sorted(by: { $0.count > $1.count }) { rmdir(path) }
            if !FileManager.default.fileExists(atPath: root) || Date() >= deadline { break }
            usleep(50_000)
        }
    }
}
