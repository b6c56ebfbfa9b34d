import FetchdConfig
import FetchdSystemd
import Logging

extension ConfigDiagnostic {
    /// Logger metadata for a rejected config: the config-rejected `MESSAGE_ID` and where the
    /// problem is (`FETCHD_CONFIG_FILE`, `FETCHD_CONFIG_LINE`, `FETCHD_CONFIG_KEY` in the journal).
    public var journalMetadata: Logger.Metadata {
        [
            MessageID.metadataKey: "\(MessageID.configRejected)", "config_file": "\(file)",
            "config_line": "\(line ?? 0)", "config_key": "\(key ?? "")",
        ]
    }
}
