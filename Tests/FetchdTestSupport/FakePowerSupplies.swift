import Foundation

/// A fake `/sys/class/power_supply`: one folder per supply with its attribute files.
public struct FakePowerSupplies {
    /// The folder holding `power_supply`.
    public let directory: TemporaryDirectory
    /// The fake `/sys/class/power_supply`.
    public var path: String { directory.file("power_supply") }

    /// Makes an empty `power_supply` folder in `directory`.
    public init(_ directory: TemporaryDirectory) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory.file("power_supply"), withIntermediateDirectories: true)
    }

    /// Writes (or rewrites) `supply`'s attributes.
    public func set(_ supply: String, _ attributes: [String: String]) throws {
        for (name, value) in attributes { try directory.write(value + "\n", to: "power_supply/\(supply)/\(name)") }
    }
}
