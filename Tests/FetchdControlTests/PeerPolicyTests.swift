import FetchdControl
import FetchdControlServer
import Testing

/// Who may use the control socket, decided from the peer's kernel-reported credentials.
struct PeerPolicyTests {
    @Test func rootAndTheDaemonsUserAreAllowed() throws {
        let policy = try PeerPolicy(daemonUID: 995, groupName: nil)
        #expect(policy.refusal(for: PeerCredentials(pid: 1, uid: 0, gid: 0)) == nil)
        #expect(policy.refusal(for: PeerCredentials(pid: 1, uid: 995, gid: 995)) == nil)
        #expect(policy.refusal(for: PeerCredentials(pid: 1, uid: 1000, gid: 1000)) != nil)
    }

    @Test(.enabled(if: PeerPolicyTests.hasNobodyInNogroup, "needs the Debian user nobody in group nogroup"))
    func membersOfTheControlGroupAreAllowed() throws {
        let policy = try PeerPolicy(daemonUID: 995, groupName: "nogroup")
        // nobody's supplementary groups (getgrouplist) include nogroup, whatever its primary group says.
        #expect(policy.refusal(for: PeerCredentials(pid: 1, uid: 65534, gid: 4242)) == nil)
        #expect(policy.refusal(for: PeerCredentials(pid: 1, uid: 4242, gid: 65534)) == nil, "primary group")
        #expect(policy.refusal(for: PeerCredentials(pid: 1, uid: 4242, gid: 4242)) != nil)
    }

    @Test func anUnknownGroupIsAClearError() {
        #expect(throws: ControlError.self) { _ = try PeerPolicy(groupName: "no-such-group-fetchd") }
    }

    static var hasNobodyInNogroup: Bool { (try? PeerPolicy(daemonUID: 0, groupName: "nogroup")) != nil }
}
