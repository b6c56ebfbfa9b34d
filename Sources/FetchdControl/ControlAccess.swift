/// Who may use the control socket, as its refusals tell it: the one recipe for letting an
/// operator in, so that the daemon's refusal, fetchctl's and fetchctl(1) say the same thing.
public enum ControlAccess {
    /// How an administrator lets an operator use fetchctl (fetchctl(1), Who may connect): the
    /// group the shipped socket already admits (SocketGroup=fetchd), named as the daemon's too.
    public static let operatorRecipe = "To let a user in: usermod -aG fetchd USER, set control_group = \"fetchd\" "
        + "in /etc/fetchd/fetchd.toml, then systemctl restart fetchd; see fetchctl(1), Who may connect"
}
