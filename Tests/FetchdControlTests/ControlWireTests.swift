import FetchdControl
import Foundation
import Testing

/// The control protocol's JSON, pinned key by key: a request and an answer holding every field
/// of every report, as fetchctl, scripts and a second transport read them. Decoded and encoded
/// again they must come out the same: a renamed property or a changed key strategy that moves
/// one key fails here, not in a user's script.
struct ControlWireTests {
    private static let request = #"""
        {"command":"status","data":"{\"id\":1}","handler":"news","limit":5,"mark_seen":true,"version":1,"wait":true}
        """#

    private static let response = #"""
        {"error":{"code":"unknown-handler","message":"no handler named x"},
         "fetch":{"duration_ms":31,"handler":"news","joined_running":true,"reason":"r","result":"newData",
                  "snapshot_path":"/var/cache/fetchd/news/latest/content"},
         "history":[{"bytes":10,"duration_ms":7,"reason":"r","result":"failed","started_at":"2026-11-28T08:00:00Z",
                     "trigger":"timer","version":"00000001-20261128T080000Z"}],
         "ok":true,
         "pong":{"daemon_version":"1.0","pid":42},
         "push":{"coalesced_pushes":2,"deferred":true,"fetch_at":"2026-11-28T09:00:00Z","handler":"news",
                 "limit":"6/hour","message":"coalesced"},
         "reload":{"applied":true,"disabled_handlers":1,"handlers":3,"problems":["p"],"restart_only":["control_socket"]},
         "status":{"config_file":"/etc/fetchd/fetchd.toml",
                   "config_problems":[{"file":"/etc/fetchd/handlers.d/a.toml","handler":"a","key":"url","line":3,"message":"m"}],
                   "daemon_version":"1.0","handlers_dir":"/etc/fetchd/handlers.d",
                   "handlers":[{"consecutive_failures":1,"enabled":true,"kind":"transfer","last_attempt_at":"2026-11-28T08:00:00Z",
                                "last_reason":"r","last_result":"failed","last_success_at":"2026-11-27T08:00:00Z","name":"iso",
                                "new_data_since_last_look":2,"next_eligible_at":"2026-11-28T10:00:00Z",
                                "pending_push_at":"2026-11-28T09:00:00Z","pending_pushes":3,"plan_reason":"before use",
                                "push_limit":"6/hour","running":false,"snapshot_path":"/var/cache/fetchd/iso/latest/content",
                                "transfer":{"bytes":100,"bytes_per_second":10,"eta_seconds":9,"resumes_at":"2026-11-28T11:00:00Z",
                                            "state":"partial","total_bytes":190},
                                "waiting_for":"network","defined_in":"/etc/fetchd/handlers.d/iso.toml:1",
                                "holds":[{"cause":"min-interval","until":"2026-11-28T10:00:00Z","detail":"1 h since the last attempt"},
                                         {"cause":"on-request","detail":"min_interval = never"}],
                                "budget":{"used":3,"per_day":12},
                                "recent":[{"duration_ms":7,"result":"failed","started_at":"2026-11-28T08:00:00Z","trigger":"timer"}]}],
                   "push_listener":"127.0.0.1:8080","started_at":"2026-11-28T07:00:00Z"},
         "usage":{"after_use":[{"from_minutes":0,"risk":0.5,"to_minutes":30}],"days_of_use":14,"handler":"news","learns":true,
                  "planned_fetches":[{"at":"2026-11-28T08:50:00Z","reason":"before use"}],
                  "recent_uses":[{"at":"2026-11-28T08:00:00Z","source":"explicit","utc_offset_seconds":3600}],
                  "sources":["explicit"],"week_by_hour":[[0.5]]},
         "used":{"handler":"news","next_fetch_at":"2026-11-28T08:50:00Z","reason":"before use"},
         "version":1}
        """#

    /// `text` decoded as `T` and encoded again, both as JSON objects.
    private func roundTrip<T: Codable>(_ text: String, as type: T.Type) throws -> (before: NSDictionary, after: NSDictionary) {
        let data = Data(text.utf8)
        let value = try ControlProtocol.decoder().decode(T.self, from: data)
        let again = try ControlProtocol.encoder().encode(value)
        let before = try #require(try JSONSerialization.jsonObject(with: data) as? NSDictionary)
        let after = try #require(try JSONSerialization.jsonObject(with: again) as? NSDictionary)
        return (before, after)
    }

    @Test func everyRequestKeyKeepsItsName() throws {
        let (before, after) = try roundTrip(Self.request, as: ControlRequest.self)
        #expect(before == after, "\(after)")
    }

    @Test func everyAnswerKeyKeepsItsName() throws {
        let (before, after) = try roundTrip(Self.response, as: ControlResponse.self)
        #expect(before == after, "\(after)")
    }
}
