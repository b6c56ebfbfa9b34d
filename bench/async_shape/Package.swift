// swift-tools-version: 6.2
// `make bench-async-shape`: what a fetch's async shape costs with no work in it (see main.swift).
import PackageDescription

let package = Package(
    name: "async-shape",
    dependencies: [.package(url: "https://github.com/apple/swift-nio", from: "2.101.2")],
    targets: [
        .executableTarget(name: "async-shape", dependencies: [
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
        ]),
    ]
)
