// swift-tools-version: 6.2
import PackageDescription

// An application of fetchd's D-Bus API in Swift: depends on fetchd's FetchdClient library.
// Here it is the source tree two folders up; elsewhere, name the repository instead:
// .package(url: "https://.../fetchd", from: "VERSION").
let package = Package(
    name: "fetchd-swift-client",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "fetchd", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "fetchd-swift-client",
            dependencies: [.product(name: "FetchdClient", package: "fetchd")]
        ),
    ]
)
