import FetchdConfig
import FetchdControl
import FetchdCore
import FetchdPlanner
import Foundation

/// The targets for text a person or a local peer writes: config files, usage traces, control
/// requests.
extension FuzzTarget {
    /// A scratch folder for the config target (one file, rewritten for every input).
    static let folder: String = {
        let path = NSTemporaryDirectory() + "fetchd-fuzz-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path + "/handlers.d", withIntermediateDirectories: true)
        return path
    }()

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
    /// as the daemon checks its fields, and must survive an encode/decode round trip unchanged;
    /// every answer must encode.
    static func control(_ data: Data) {
        switch ControlProtocol.parse(data) {
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
