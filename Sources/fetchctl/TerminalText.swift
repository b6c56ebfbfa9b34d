/// Text from the daemon (a failed program's reason, a server's message, a config problem) made
/// safe for a terminal: control characters are shown, not obeyed, so a program's output cannot
/// move the cursor, retitle the window or hide a line of the admin's screen.
enum TerminalText {
    /// `text` with C0 controls (tab and line feed excepted), DEL and C1 controls written as
    /// `\u{1B}`-style escapes.
    static func visible(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 0x20 && scalar != "\t" && scalar != "\n") || (0x7F...0x9F).contains(scalar.value)
    }
}
