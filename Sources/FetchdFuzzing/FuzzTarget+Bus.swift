import FetchdConfig
import FetchdCore
import FetchdDaemon
import FetchdSystemd
import Foundation

/// The target for method calls a D-Bus peer sends.
extension FuzzTarget {
    /// The input as a method call of fetchd's API (`BusCallScript`), read as the daemon reads
    /// one (`BusRequest`: the name, the `a{sv}` within `BusOption.Limits`, the options as a
    /// handler file's values), and a registration's options made into a handler under both
    /// callers' rules. What the call must read as is worked out beside it from the values
    /// appended (`BusCallScript.expected`), and the two must agree: the request, or a refusal
    /// named `InvalidArguments` that starts with what was wrong.
    static func busCall(_ data: Data) {
        let script = BusCallScript(Array(data))
        guard let message = script.message() else { return }
        let expected = script.expected()
        let read: Result<BusRequest, BusReplyError>
        do throws(BusReplyError) { read = .success(try BusRequest(message, uid: script.uid)) } catch { read = .failure(error) }
        switch (read, expected) {
        case (.success(let request), .request(let method)):
            precondition(BusCallScript.same(request.method, method),
                         "\(script.member) read as \(request.method), expected \(method)")
            precondition(request.uid == script.uid)
            if case .register(let name, let options) = request.method { register(name, options, uid: script.uid) }
        case (.failure(let error), .refused(let reasons)):
            precondition(error.name == Fetchd1Names.error("InvalidArguments"), "\(script.member): \(error.name): \(error.message)")
            // Each expected reason is how the message starts (bytes compared: Foundation's
            // search took seconds over 64 reasons of 16 KiB).
            precondition(reasons.contains { error.message.utf8.starts(with: $0.utf8) },
                         "\(script.member) refused with \"\(error.message.prefix(500))\", expected one of \(reasons)")
        case (.success(let request), .refused(let reasons)):
            preconditionFailure("\(script.member) read as \(request.method), expected a refusal saying one of \(reasons)")
        case (.failure(let error), .request(let method)):
            preconditionFailure("\(script.member) refused (\(error.name): \(error.message.prefix(500))), expected \(method)")
        }
    }

    /// A registration as the daemon makes it a handler, for root and for anyone else: accepted,
    /// it is the handler the caller named, holds no key its caller may not set, and its options
    /// read back from the state database as they were; refused, it says why.
    private static func register(_ name: String, _ options: [String: Registration.Value], uid: UInt32) {
        guard let registered = RegisteredName(base: name, uid: uid) else { return }
        let registration = Registration(name: registered, options: options)
        for caller in [Registration.Caller.privileged, .unprivileged] {
            switch registration.handler(daemon: daemon, caller: caller) {
            case .success(let handler):
                precondition(handler.name == registered.qualified && handler.registeredBy == uid, "registered as \(handler.name)")
                precondition(handler.kind != .exec, "an exec handler registered over D-Bus")
                precondition(Registration.refusedKeys.keys.allSatisfy { options[$0] == nil }, "a refused key accepted: \(options.keys)")
                if caller == .unprivileged {
                    precondition(Registration.privilegedKeys.keys.allSatisfy { options[$0] == nil },
                                 "a privileged key accepted from an unprivileged caller: \(options.keys)")
                }
                let stored = Registration.options(stored: registration.storedOptions)
                precondition(stored.map { BusCallScript.same($0, options) } == true,
                             "options stored as \(registration.storedOptions.prefix(500)) read back as \(String(describing: stored))")
            case .failure(let refusal):
                precondition(!refusal.problems.isEmpty && !refusal.message.isEmpty, "a refusal that says nothing")
            }
        }
    }

    /// The daemon's settings a registration is checked against: the defaults.
    private static let daemon = DaemonConfig()
}
