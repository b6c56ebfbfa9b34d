import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdPlanner
import Foundation

/// Fuzz targets for the parsers that read untrusted text: the TOML config loader (with its
/// validation and line index), the usage-trace parser (with the model and planner fed what
/// it parsed) and the control protocol (a request line as a peer sends it). Built by `make fuzz` with `-sanitize=fuzzer,address -DFUZZING`: libFuzzer then
/// provides `main` and calls `LLVMFuzzerTestOneInput` with each input; `FETCHD_FUZZ` picks the
/// target (`config`, `trace` or `control`). A normal build makes a binary that says how to build it.
enum FuzzTarget {
    /// A scratch folder for the config target (one file, rewritten for every input).
    static let folder: String = {
        let path = NSTemporaryDirectory() + "fetchd-fuzz-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path + "/handlers.d", withIntermediateDirectories: true)
        return path
    }()

    /// Runs one input through the target named by `FETCHD_FUZZ`.
    static func run(_ data: Data) {
        switch ProcessInfo.processInfo.environment["FETCHD_FUZZ"] ?? "config" {
        case "trace": trace(data)
        case "control": control(data)
        default: config(data)
        }
    }

    /// The input as the main config, and again as a handler file beside a minimal main config.
    static func config(_ data: Data) {
        let main = folder + "/fetchd.toml", handlers = folder + "/handlers.d/fuzz.toml"
        _ = FileManager.default.createFile(atPath: main, contents: data)
        try? FileManager.default.removeItem(atPath: handlers)
        _ = ConfigLoader.check(path: main)
        _ = FileManager.default.createFile(atPath: main, contents: Data("handlers_dir = \"\(folder)/handlers.d\"\n".utf8))
        _ = FileManager.default.createFile(atPath: handlers, contents: data)
        _ = ConfigLoader.check(path: main)
    }

    /// The input as a control request line: parsed as the server parses it; a request is checked
    /// as the daemon checks its fields, and must survive an encode/decode round trip unchanged
    /// (a trap otherwise, which the fuzzer reports); every answer must encode.
    static func control(_ data: Data) {
        switch ControlServer.parse(data) {
        case .success(let request):
            if let name = request.handler { _ = HandlerName.problem(with: name) }
            if let pushData = request.data { _ = try? PushData.validate(Array(pushData.utf8)) }
            let encoded = try? ControlProtocol.encoder().encode(request)
            let decoded = encoded.flatMap { try? ControlProtocol.decoder().decode(ControlRequest.self, from: $0) }
            precondition(decoded == request, "a control request did not survive an encode/decode round trip")
        case .failure(let error):
            precondition((try? ControlProtocol.encoder().encode(ControlResponse(ok: false, error: error))) != nil,
                         "an error answer could not be encoded")
        }
    }

    /// The input as a usage trace; what parses is learned and planned from.
    static func trace(_ data: Data) {
        guard let events = try? UsageTrace.parse(String(decoding: data, as: UTF8.self)), !events.isEmpty else { return }
        var model = UsageModel()
        for event in events.prefix(200) { model.add(event) }
        let planner = FetchPlanner(limits: .init(budgetPerDay: 12, minIntervalSeconds: 300, maxStalenessSeconds: 86_400))
        let now = events[min(events.count, 200) - 1].date
        _ = planner.next(now: now, model: model, recentFetches: [now.addingTimeInterval(-3600)])
        _ = model.profile(at: now)
    }
}

#if FUZZING
/// libFuzzer's entry point for one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzTarget.run(bytes.map { Data(bytes: $0, count: count) } ?? Data())
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
