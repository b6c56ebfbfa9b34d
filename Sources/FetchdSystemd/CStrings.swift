#if canImport(Glibc)
import Glibc
#endif

/// Swift strings as the C array of C strings the shim's calls take (`const char *const *` and a
/// count), for the bus calls and the bus replies alike.
enum CStrings {
    /// Calls `body` with copies of `strings`, valid during the call only.
    static func with(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?, Int) -> Int32) -> Int32 {
        let copies: [UnsafePointer<CChar>?] = strings.map { UnsafePointer(strdup($0)) }
        defer { for copy in copies { free(UnsafeMutableRawPointer(mutating: copy)) } }
        return copies.withUnsafeBufferPointer { body($0.baseAddress, $0.count) }
    }
}
