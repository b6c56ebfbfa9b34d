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

    /// A slash that is part of a larger character (grapheme cluster) is still the separator
    /// the kernel sees: the split is on bytes.
    @Test(arguments: [
        ("/a/\u{301}b", "/a", "\u{301}b"),  // a combining mark after the slash
        ("/a/\u{200D}b", "/a", "\u{200D}b"),  // a zero-width joiner
        ("/a/\u{FE0F}b", "/a", "\u{FE0F}b"),  // a variation selector
        ("\u{600}/a", "\u{600}", "a"),  // a prepended mark before it
        ("/a/b/\u{301}", "/a/b", "\u{301}"),  // a final slash that is not trailing
    ])
    func aSlashInsideAGraphemeClusterStillSeparates(path: String, folder: String, last: String) {
        #expect(PathName.directory(of: path) == folder)
        #expect(PathName.lastComponent(of: path) == last)
    }
}
