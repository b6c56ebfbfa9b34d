import FetchdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Bad input never hurts the daemon (issue 41): the real fetchd on a private dbus-daemon, sent
/// what a broken or hostile application sends (`misuse.py` below, python3-dbus). Every refusal
/// is a named error whose message names the problem; after each kind of misuse the daemon is
/// still running, still answers a well-formed call at once, and its handlers are as they were.
@Suite(.serialized)
struct DBusMisuseTests {
    /// The daemon on a private bus with one registered handler, `keep`, that the misuse must
    /// not disturb.
    struct Fixture {
        let bus: DBusAPITests.Bus
        let daemon: DaemonProcess
        let script: String

        init(keep: Bool = true) async throws {
            bus = try await DBusAPITests.Bus()
            daemon = try await bus.daemon()
            script = bus.folder.file("misuse.py")
            try DBusMisuseTests.script.write(toFile: script, atomically: true, encoding: .utf8)
            if keep {
                let registered = try await bus.run(["register", "keep", "https://example.com/keep", "min_interval=1d"])
                #expect(registered.output == "keep@\(getuid())\n", "\(registered.output)")
            }
        }

        /// Runs `misuse.py` with `arguments`; its calls' answers by label.
        func misuse(_ arguments: [String]) async throws -> [String: Answer] {
            let result = try await ChildProcess.runWithoutBlocking(
                "/usr/bin/env", ["DBUS_SESSION_BUS_ADDRESS=\(bus.bus.address)", "/usr/bin/python3", script] + arguments)
            #expect(result.status == 0, "misuse.py \(arguments): \(result.output.prefix(2_000))")
            var answers: [String: Answer] = [:]
            for line in result.output.split(separator: "\n") {
                guard let data = line.data(using: .utf8), let answer = try? JSONDecoder().decode(Answer.self, from: data) else { continue }
                answers[answer.label] = answer
            }
            return answers
        }

        /// The daemon is running, answers a well-formed call within a second (scaled for the
        /// sanitizers), and still lists `handlers` with `keep` unchanged.
        func expectUnhurt(_ handlers: [String] = ["keep"], _ comment: Comment) async throws {
            #expect(daemon.process.isRunning, "fetchd exited after \(comment)")
            let started = ContinuousClock.now
            let answers = try await misuse(["healthy"])
            let elapsed = ContinuousClock.now - started
            #expect(answers["list"]?.reply == handlers.sorted(), "after \(comment): \(answers)")
            if handlers.contains("keep") {
                #expect(answers["status"]?.reply?.first?.contains("kind=http") == true, "after \(comment): \(answers)")
            }
            // Python's start and import take most of it.
            #expect(elapsed < .seconds(SanitizerRun.scaled(5)), "a well-formed call took \(elapsed) after \(comment)")
        }

        func stop() async {
            let (code, log) = await daemon.stopWithoutBlocking()
            #expect(code == 0, "\(log.suffix(3_000))")
            #expect(!log.contains("Fatal error") && !log.contains("AddressSanitizer"), "\(log.suffix(3_000))")
            await bus.bus.stop()
        }
    }

    /// One call's answer, as `misuse.py` prints it.
    struct Answer: Decodable, CustomStringConvertible {
        let label: String
        let error: String?
        let message: String?
        let reply: [String]?

        var description: String { error.map { "\($0): \((message ?? "").prefix(300))" } ?? "\(reply ?? [])" }
    }

    /// Wrong-typed and nested variants, unknown keys, a 1 MB string (as a value, a key and a
    /// name), 100,000 elements, 65 options, a `t` too large: each refused with
    /// `InvalidArguments` naming the key and what is wrong, nothing registered.
    @Test func badOptionsAreRefusedByName() async throws {
        let fixture = try await Fixture()
        let answers = try await fixture.misuse(["bad-options"])
        let invalid = "org.fetchd.Fetchd1.Error.InvalidArguments"
        let expected: [(String, String)] = [
            ("url-as-int", "url: expected a string"),
            ("min-interval-as-array", "min_interval: a value of type \"ai\" is not accepted"),
            ("min-interval-as-strings", "min_interval: expected a string, found an array"),
            ("nested-variant", "url: a value of type \"v\" is not accepted"),
            ("options-in-a-variant", "headers: a value of type \"a{sv}\" is not accepted"),
            ("fd-in-a-variant", "url: a value of type \"h\" is not accepted"),
            ("unknown-key", "colour: unknown key"),
            ("megabyte-value", "the value of \"url\" is longer than 16384 bytes"),
            ("megabyte-key", "an option name is longer than 16384 bytes"),
            ("megabyte-header", "a value in \"headers\" is longer than 16384 bytes"),
            ("megabyte-name", "is not a handler name: the name is longer than 64 characters"),
            ("100000-elements", "\"usage\" has more than 256 elements"),
            ("65-options", "more than 64 options"),
            ("too-large", "retain: 9223372036854775808 is too large"),
            ("fetch-now-option", "FetchNow takes no option \"priority\" in this version"),
            ("exec", "kind: exec handlers run programs"),
        ]
        for (label, words) in expected {
            let answer = answers[label]
            #expect(answer?.error == invalid && answer?.message?.contains(words) == true,
                    "\(label): expected \(invalid) saying \(words), got \(answer.map(String.init(describing:)) ?? "no answer")")
            // A megabyte sent is not a megabyte answered: the message quotes a name in part.
            #expect((answer?.message?.utf8.count ?? 0) < 2_000, "\(label): a \(answer?.message?.utf8.count ?? 0)-byte message")
        }
        try await fixture.expectUnhurt(["keep"], "bad options")
        await fixture.stop()
    }

    /// A call whose signature is not the method's, and a method that does not exist, are
    /// answered by sd-bus before fetchd reads them, with the standard errors naming both.
    @Test func wrongSignaturesAndUnknownMethodsAreRefused() async throws {
        let fixture = try await Fixture()
        let answers = try await fixture.misuse(["bad-calls"])
        let expected: [(String, String, [String])] = [
            ("register-ss", "org.freedesktop.DBus.Error.InvalidArgs", ["'ss'", "RegisterHandler", "'sa{sv}'"]),
            ("register-nothing", "org.freedesktop.DBus.Error.InvalidArgs", ["RegisterHandler", "'sa{sv}'"]),
            ("list-with-argument", "org.freedesktop.DBus.Error.InvalidArgs", ["'s'", "ListHandlers"]),
            ("get-as-int", "org.freedesktop.DBus.Error.InvalidArgs", ["'i'", "GetHandler"]),
            ("unknown-method", "org.freedesktop.DBus.Error.UnknownMethod", ["Frobnicate"]),
            ("unknown-interface", "org.freedesktop.DBus.Error.UnknownMethod", ["org.fetchd.Fetchd2"]),
        ]
        for (label, name, words) in expected {
            let answer = answers[label]
            #expect(answer?.error == name && words.allSatisfy { answer?.message?.contains($0) == true },
                    "\(label): expected \(name) saying \(words), got \(answer.map(String.init(describing:)) ?? "no answer")")
        }
        try await fixture.expectUnhurt(["keep"], "wrong signatures and unknown methods")
        await fixture.stop()
    }

    /// A uid registers 64 handlers; the 65th is refused with `QuotaExceeded`, the 64 are all
    /// listed, replacing one of them still works, and once one is gone a new one fits.
    @Test func aUIDMayRegister64Handlers() async throws {
        let fixture = try await Fixture(keep: false)
        let answers = try await fixture.misuse(["quota"])
        let names = (0..<64).map { String(format: "h%02d", $0) }
        for name in names {
            #expect(answers["register-\(name)"]?.reply == ["\(name)@\(getuid())"], "\(name): \(String(describing: answers["register-\(name)"]))")
        }
        let refused = answers["register-h64"]
        #expect(refused?.error == "org.fetchd.Fetchd1.Error.QuotaExceeded"
                && refused?.message?.contains("you have 64 handlers registered, the most a uid may") == true,
                "\(String(describing: refused))")
        #expect(answers["list-at-cap"]?.reply == names, "\(String(describing: answers["list-at-cap"]))")
        #expect(answers["replace-h00"]?.reply == ["h00@\(getuid())"], "\(String(describing: answers["replace-h00"]))")
        #expect(answers["unregister-h63"]?.error == nil, "\(String(describing: answers["unregister-h63"]))")
        #expect(answers["register-h64-again"]?.reply == ["h64@\(getuid())"], "\(String(describing: answers["register-h64-again"]))")
        try await fixture.expectUnhurt(Array(names.dropLast()) + ["h64"], "65 registrations")
        await fixture.stop()
    }

    /// Callers that leave before their answer (FetchNow, RegisterHandler, GetHandler, 50 times
    /// each), one that sends 600 calls and never reads an answer (another caller is still
    /// answered at once meanwhile), and 300 calls at once from three connections: every call
    /// answered, by its reply or by `LimitsExceeded` (300 registrations at once pass the limit
    /// of 256 in flight about one run in two here).
    @Test func callersThatLeaveFloodOrNeverReadHurtNoOne() async throws {
        let fixture = try await Fixture()
        _ = try await fixture.misuse(["disconnect"])
        try await fixture.expectUnhurt(["keep", "late"], "callers that disconnect mid-call")

        let unread = try await fixture.misuse(["never-read"])
        #expect(unread["sent"]?.reply == ["600"], "\(unread)")
        let promptly = try #require(unread["other-caller"]?.reply?.first.flatMap(Double.init), "\(unread)")
        #expect(promptly < SanitizerRun.scaled(1), "another caller waited \(promptly) s for ListHandlers")
        try await fixture.expectUnhurt(["keep", "late"], "a caller that never reads its replies")

        let flood = try await fixture.misuse(["flood"])
        let counts = try #require(flood["counts"]?.reply, "\(flood)")
        // answered, refused with LimitsExceeded, anything else, then that refusal's message
        #expect(counts.count >= 3 && counts[2] == "0" && (Int(counts[0]) ?? 0) + (Int(counts[1]) ?? 0) == 300, "\(counts)")
        if counts[1] != "0" {
            #expect(counts.last?.contains("fetchd is answering 256 calls already") == true, "\(counts)")
        }
        try await fixture.expectUnhurt(["flood", "keep", "late"], "300 calls at once")
        await fixture.stop()
    }

    /// 20,000 FetchNow calls while a fetch of the handler runs (its server never answers):
    /// each is answered, and the daemon's memory stays where it was (each call used to leave a
    /// task waiting for the fetch's end, about 10 KB apiece).
    @Test func fetchNowWhileAFetchRunsHoldsNoMemory() async throws {
        let fixture = try await Fixture()
        let answers = try await fixture.misuse(["fetch-now-flood", "\(fixture.daemon.process.processIdentifier)"])
        let flood = try #require(answers["flood"]?.reply, "\(answers)")
        #expect(flood.first == "20000", "\(flood)")
        let before = Int(answers["rss-before"]?.reply?.first ?? "") ?? 0, after = Int(answers["rss-after"]?.reply?.first ?? "") ?? 0
        #expect(before > 0 && after > 0, "\(answers)")
        // ASan's quarantine keeps freed memory: its resident size measures the sanitizer.
        #expect(after - before < 30 * 1024 || SanitizerRun.isAddressSanitizer,
                "resident memory grew from \(before / 1024) MiB to \(after / 1024) MiB over 20,000 FetchNow calls")
        try await fixture.expectUnhurt(["keep", "slow"], "20,000 FetchNow calls during a fetch")
        await fixture.stop()
    }

    /// ReportUse 2,000 times in a loop: one session of use, recorded once (the usage model folds
    /// uses within 5 minutes into one), not 2,000 rows each followed by a plan made again from
    /// all of them.
    @Test func reportUseInALoopIsOneUse() async throws {
        let fixture = try await Fixture()
        let answers = try await fixture.misuse(["report-use-loop", fixture.daemon.directory.file("state/state.sqlite")])
        #expect(answers["reported"]?.reply?.first == "2000", "\(answers)")
        #expect(answers["recorded"]?.reply == ["1"], "uses recorded for 2,000 ReportUse calls in a loop: \(answers)")
        try await fixture.expectUnhurt(["keep"], "2,000 ReportUse calls")
        await fixture.stop()
    }
}

extension DBusMisuseTests {
    /// The misbehaving client. Each command prints one JSON line per call: its label and the
    /// reply's values as strings, or the error's name and message.
    static let script = #"""
        import json, os, sys, time
        import dbus
        import dbus.lowlevel
        from dbus.mainloop.glib import DBusGMainLoop
        from gi.repository import GLib

        NAME = PATH_INTERFACE = "org.fetchd.Fetchd1"
        PATH = "/org/fetchd/Fetchd1"
        ADDRESS = os.environ["DBUS_SESSION_BUS_ADDRESS"]

        def connect():
            return dbus.bus.BusConnection(ADDRESS)

        def message(method, signature=None, *args, interface=PATH_INTERFACE):
            call = dbus.lowlevel.MethodCallMessage(NAME, PATH, interface, method)
            if signature:
                call.append(*args, signature=signature)
            return call

        def text(value):
            if isinstance(value, dbus.Dictionary):
                return ",".join("%s=%s" % (key, text(item)) for key, item in sorted(value.items()))
            if isinstance(value, dbus.Array):
                return ",".join(text(item) for item in value)
            return str(value)

        def show(label, **fields):
            print(json.dumps(dict(label=label, **fields)), flush=True)

        def call(bus, label, method, signature=None, *args, interface=PATH_INTERFACE):
            try:
                reply = bus.send_message_with_reply_and_block(message(method, signature, *args, interface=interface), 30)
                values = reply.get_args_list()
                if len(values) == 1 and isinstance(values[0], dbus.Array) and not isinstance(values[0], dbus.Dictionary):
                    values = list(values[0])
                show(label, reply=[text(value) for value in values])
            except dbus.exceptions.DBusException as error:
                show(label, error=error.get_dbus_name(), message=error.get_dbus_message())

        def options(**values):
            # A registration's options: an http handler's unless told otherwise.
            return dbus.Dictionary(dict({"kind": "http"}, **values), signature="sv")

        def no_options(**values):
            return dbus.Dictionary(values, signature="sv")

        def register(bus, label, name, opts):
            call(bus, label, "RegisterHandler", "sa{sv}", name, opts)

        URL = "https://example.com/news"
        MEGABYTE = "x" * (1 << 20)

        def bad_options(bus):
            register(bus, "url-as-int", "bad", options(kind="http", url=dbus.Int32(5)))
            register(bus, "min-interval-as-array", "bad",
                     options(url=URL, min_interval=dbus.Array([1, 2], signature="i")))
            register(bus, "min-interval-as-strings", "bad",
                     options(url=URL, min_interval=dbus.Array(["5m"], signature="s")))
            register(bus, "nested-variant", "bad", options(url=dbus.String(URL, variant_level=2)))
            register(bus, "options-in-a-variant", "bad",
                     options(url=URL, headers=dbus.Dictionary({"a": dbus.String("b")}, signature="sv")))
            with open("/dev/null") as null:
                register(bus, "fd-in-a-variant", "bad", options(url=dbus.types.UnixFd(null, variant_level=1)))
            register(bus, "unknown-key", "bad", options(url=URL, colour="blue"))
            register(bus, "megabyte-value", "bad", options(url=URL + MEGABYTE))
            register(bus, "megabyte-key", "bad", options(url=URL) | {MEGABYTE: "x"})
            register(bus, "megabyte-header", "bad",
                     options(url=URL, headers=dbus.Dictionary({"X-Big": MEGABYTE}, signature="ss")))
            register(bus, "megabyte-name", MEGABYTE, options(url=URL))
            register(bus, "100000-elements", "bad",
                     options(url=URL, usage=dbus.Array(["reads"] * 100000, signature="s")))
            register(bus, "65-options", "bad", dbus.Dictionary({"k%d" % i: "x" for i in range(64)}, signature="sv") | {"url": URL})
            register(bus, "too-large", "bad", options(url=URL, retain=dbus.UInt64(1 << 63)))
            call(bus, "fetch-now-option", "FetchNow", "sa{sv}", "keep", no_options(priority="high"))
            register(bus, "exec", "bad", options(kind="exec", url=URL))

        def bad_calls(bus):
            call(bus, "register-ss", "RegisterHandler", "ss", "bad", "url")
            call(bus, "register-nothing", "RegisterHandler")
            call(bus, "list-with-argument", "ListHandlers", "s", "keep")
            call(bus, "get-as-int", "GetHandler", "i", 5)
            call(bus, "unknown-method", "Frobnicate", "s", "keep")
            call(bus, "unknown-interface", "ListHandlers", interface="org.fetchd.Fetchd2")

        def quota(bus):
            for index in range(65):
                register(bus, "register-h%02d" % index, "h%02d" % index, options(url=URL + str(index)))
            call(bus, "list-at-cap", "ListHandlers")
            register(bus, "replace-h00", "h00", options(url=URL + "-again"))
            call(bus, "unregister-h63", "UnregisterHandler", "s", "h63")
            register(bus, "register-h64-again", "h64", options(url=URL + "64"))

        def disconnect():
            # Each call sent, then the connection closed before its answer can arrive.
            for index in range(50):
                for method, signature, args in [("FetchNow", "sa{sv}", ("keep", no_options())),
                                                ("RegisterHandler", "sa{sv}", ("late", options(url=URL))),
                                                ("GetHandler", "s", ("keep",))]:
                    bus = connect()
                    bus.send_message(message(method, signature, *args))
                    bus.flush()
                    bus.close()
            # Whether those registrations were carried out or not (the caller was gone before
            # fetchd could ask the bus who it was), a caller that stays registers it.
            register(connect(), "late", "late", options(url=URL))

        def never_read():
            # 600 calls on one connection whose answers are never read, the connection kept open
            # while another caller is timed.
            silent = connect()
            for index in range(600):
                silent.send_message(message("GetHandler", "s", "keep"))
            silent.flush()
            show("sent", reply=["600"])
            time.sleep(1)
            other = connect()
            started = time.monotonic()
            other.send_message_with_reply_and_block(message("ListHandlers"), 30)
            show("other-caller", reply=["%.3f" % (time.monotonic() - started)])
            time.sleep(1)
            silent.close()

        def flood():
            # 300 calls at once, 100 on each of three connections (dbus-daemon lets a connection
            # wait for 128 answers at most), answered in any order.
            DBusGMainLoop(set_as_default=True)
            loop = GLib.MainLoop()
            tally = {"answered": 0, "limits": 0, "other": 0, "message": ""}
            def done():
                if tally["answered"] + tally["limits"] + tally["other"] == 300:
                    loop.quit()
            def answered(*values):
                tally["answered"] += 1
                done()
            def failed(error):
                if error.get_dbus_name() == "org.freedesktop.DBus.Error.LimitsExceeded":
                    tally["limits"] += 1
                    tally["message"] = error.get_dbus_message()
                else:
                    tally["other"] += 1
                    tally["message"] = error.get_dbus_name() + ": " + error.get_dbus_message()
                done()
            buses = [dbus.bus.BusConnection(ADDRESS, mainloop=DBusGMainLoop()) for _ in range(3)]
            for index in range(300):
                # Registrations (each stored durably before its answer) come in faster than they
                # are carried out, so the calls in flight may pass fetchd's limit.
                buses[index % 3].call_async(NAME, PATH, PATH_INTERFACE, "RegisterHandler", "sa{sv}",
                                            ("flood", options(url=URL + "/flood")), answered, failed, timeout=60)
            GLib.timeout_add_seconds(60, loop.quit)
            loop.run()
            show("counts", reply=[str(tally["answered"]), str(tally["limits"]), str(tally["other"]), tally["message"]])

        def resident_kib(pid):
            with open("/proc/%s/status" % pid) as status:
                return next(line.split()[1] for line in status if line.startswith("VmRSS:"))

        def fetch_now_flood(pid):
            # A server that never answers (the kernel completes the connection, nobody reads),
            # so the registered handler's first fetch runs until its deadline.
            import socket
            server = socket.socket()
            server.bind(("127.0.0.1", 0))
            server.listen(16)
            bus = connect()
            register(bus, "register-slow", "slow",
                     options(url="http://127.0.0.1:%d/slow" % server.getsockname()[1], deadline="10m"))
            DBusGMainLoop(set_as_default=True)
            loop = GLib.MainLoop()
            buses = [dbus.bus.BusConnection(ADDRESS, mainloop=DBusGMainLoop()) for _ in range(4)]
            tally = {"sent": 0, "answered": 0, "failed": 0, "message": ""}
            def send(count):
                # At most 100 waiting at a time (dbus-daemon lets a connection wait for 128).
                while tally["sent"] < count and tally["sent"] - tally["answered"] - tally["failed"] < 100:
                    buses[tally["sent"] % 4].call_async(NAME, PATH, PATH_INTERFACE, "FetchNow", "sa{sv}",
                                                        ("slow", no_options()), lambda *values: answered(count),
                                                        lambda error: failed(count, error), timeout=60)
                    tally["sent"] += 1
                if tally["answered"] + tally["failed"] >= count:
                    loop.quit()
            def answered(count):
                tally["answered"] += 1
                send(count)
            def failed(count, error):
                tally["failed"] += 1
                tally["message"] = error.get_dbus_name() + ": " + error.get_dbus_message()
                send(count)
            # A first thousand, so that the buffers they need are there before measuring.
            send(1000)
            loop.run()
            show("rss-before", reply=[resident_kib(pid)])
            tally.update(sent=0, answered=0)
            send(20000)
            loop.run()
            show("rss-after", reply=[resident_kib(pid)])
            show("flood", reply=[str(tally["answered"]), str(tally["failed"]), tally["message"]])

        def report_use_loop(database):
            import sqlite3
            bus = connect()
            reported = 0
            for index in range(2000):
                bus.send_message_with_reply_and_block(message("ReportUse", "s", "keep"), 30)
                reported += 1
            show("reported", reply=[str(reported)])
            with sqlite3.connect("file:%s?mode=ro" % database, uri=True) as db:
                count = db.execute("SELECT COUNT(*) FROM usage_event WHERE handler = ?", ("keep@%d" % os.getuid(),)).fetchone()[0]
            show("recorded", reply=[str(count)])

        def healthy(bus):
            call(bus, "list", "ListHandlers")
            call(bus, "status", "GetHandler", "s", "keep")

        command = sys.argv[1]
        if command == "bad-options": bad_options(connect())
        elif command == "bad-calls": bad_calls(connect())
        elif command == "quota": quota(connect())
        elif command == "disconnect": disconnect()
        elif command == "never-read": never_read()
        elif command == "flood": flood()
        elif command == "fetch-now-flood": fetch_now_flood(sys.argv[2])
        elif command == "report-use-loop": report_use_loop(sys.argv[2])
        elif command == "healthy": healthy(connect())
        """#
}
