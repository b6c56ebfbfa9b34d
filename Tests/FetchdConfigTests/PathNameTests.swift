import FetchdCore
import Testing

/// `PathName`'s folder and last component, on the paths an administrator or fetchd may pass.
struct PathNameTests {
    @Test(arguments: [
        ("/a/b", "/a", "b"), ("/a", "/", "a"), ("b", "", "b"), ("/", "/", ""), ("//", "/", ""),
        ("/a/b/", "/a", "b"), ("/a/b//", "/a", "b"), ("r/state", "r", "state"), ("", "", ""),
        ("/var/cache/fetchd/.staging/news.1a2b/content", "/var/cache/fetchd/.staging/news.1a2b", "content"),
        ("/srv/café/nouvelles/été", "/srv/café/nouvelles", "été"), ("/données/日本語", "/données", "日本語"),
    ])
    func folderAndLastComponent(path: String, folder: String, last: String) {
        #expect(PathName.directory(of: path) == folder)
        #expect(PathName.lastComponent(of: path) == last)
    }

    /// A slash followed by a combining mark is one character but still the separator the
    /// kernel sees: the split is on bytes.
    @Test func aSlashBeforeACombiningMarkStillSeparates() {
        let path = "/a/\u{301}b"
        #expect(PathName.directory(of: path) == "/a")
        #expect(PathName.lastComponent(of: path) == "\u{301}b")
    }
}
