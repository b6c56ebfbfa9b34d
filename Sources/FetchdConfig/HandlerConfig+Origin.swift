extension HandlerConfig {
    /// Where a handler was defined.
    public enum Origin: Sendable, Equatable {
        /// A handler file an administrator wrote (`sourceFile`).
        case file
        /// An application of this uid registered it over D-Bus.
        case registered(uid: UInt32)
    }

    /// The uid that registered the handler over D-Bus; nil for a handler from a file.
    public var registeredBy: UInt32? {
        if case .registered(let uid) = origin { uid } else { nil }
    }

    /// Has every connection of the handler's fetches go to global addresses
    /// (`HTTPOptions.globalAddressesOnly`).
    mutating func restrictToGlobalAddresses() {
        switch options {
        case .http(var request):
            request.globalAddressesOnly = true
            options = .http(request)
        case .transfer(var transfer):
            transfer.request.globalAddressesOnly = true
            options = .transfer(transfer)
        case .exec: break
        }
    }
}
