import FetchdFuzzing
import Foundation

// libFuzzer's side of the fuzz targets (`FetchdFuzzing`). Built by `make fuzz` with
// `-sanitize=fuzzer,address -DFUZZING`: libFuzzer then provides the driver and calls
// `LLVMFuzzerTestOneInput` with each input; `FETCHD_FUZZ` names the target (see `FuzzTarget`).
// A normal build makes a binary that says how to build it.

#if FUZZING
/// The target `FETCHD_FUZZ` names, read once.
let target: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["FETCHD_FUZZ"] ?? "config"
    guard let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("fetchd-fuzz: FETCHD_FUZZ=\(name) is not a target; expected one of \(names)\n".utf8))
        exit(2)
    }
    return target
}()

/// libFuzzer's entry point for one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    target.run(bytes.map { Data(bytes: $0, count: count) } ?? Data())
    return 0
}

/// libFuzzer's driver (compiler-rt), given our callback.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// The entry point SwiftPM links an executable with (it renames `main` to `<target>_main`):
/// hands the command line to libFuzzer.
@_cdecl("fetchd_fuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments, fuzzOneInput)
}
#else
@main
struct FuzzMain {
    static func main() {
        FileHandle.standardError.write(Data("fetchd-fuzz: build it with `make fuzz` (libFuzzer; swift build -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING)\n".utf8))
        exit(2)
    }
}
#endif
