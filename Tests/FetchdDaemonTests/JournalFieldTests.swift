import FetchdSystemd
import Testing

/// Logger metadata keys become valid journald field names.
struct JournalFieldTests {
    @Test(arguments: [
        ("handler", "FETCHD_HANDLER"),
        ("duration_ms", "FETCHD_DURATION_MS"),
        ("config-file", "FETCHD_CONFIG_FILE"),
        ("näme.x", "FETCHD_N_ME_X"),
        ("_trusted", "FETCHD__TRUSTED"),
        ("9lives", "FETCHD_9LIVES"),
    ])
    func metadataKeysAreSanitised(key: String, field: String) {
        #expect(JournalLogHandler.fieldName(key) == field)
    }

    @Test func fieldNamesAreAtMost64Characters() {
        let name = JournalLogHandler.fieldName(String(repeating: "a", count: 200))
        #expect(name.count == 64 && name.hasPrefix("FETCHD_AAAA"))
    }

    @Test func stderrIsTheJournalOnlyWhenJournalStreamNamesIt() {
        #expect(!LogDestination.stderrIsJournal(environment: [:]))
        #expect(!LogDestination.stderrIsJournal(environment: ["JOURNAL_STREAM": "1:2"]))
    }
}
