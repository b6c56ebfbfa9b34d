import CurlKit
import FetchdTestSupport
import Foundation
import Testing

/// HTTP/2 where the server offers it: Debian's nginx with TLS and h2 on loopback. The fetches
/// of one wake to one host share a single connection (multiplexed streams), and each result
/// says which protocol carried it.
struct HTTP2Tests {
    /// nginx (Debian's `nginx-light`, installed by `make test-deps`) serving `files` over TLS with
    /// HTTP/2, logging each request's connection number and protocol to `access.log`.
    static func startNginx(in directory: TemporaryDirectory, certificate: String, key: String, files: Int) throws -> TestHTTPServer {
        let root = directory.file("www")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        for index in 0..<files {
            try Data(repeating: UInt8(index % 256), count: 1024).write(to: URL(fileURLWithPath: "\(root)/\(index)"))
        }
        return try TestHTTPServer { port in
            let config = """
                daemon off; master_process off; worker_processes 1; pid \(directory.file("nginx.pid"));
                error_log \(directory.file("error.log")) warn;
                events { worker_connections 256; }
                http {
                  log_format streams '$connection $server_protocol $request_uri';
                  access_log \(directory.file("access.log")) streams;
                  client_body_temp_path \(directory.path); proxy_temp_path \(directory.path);
                  fastcgi_temp_path \(directory.path); uwsgi_temp_path \(directory.path); scgi_temp_path \(directory.path);
                  server {
                    listen 127.0.0.1:\(port) ssl http2;
                    ssl_certificate \(certificate); ssl_certificate_key \(key);
                    root \(root);
                  }
                }
                """
            try? config.write(toFile: directory.file("nginx-\(port).conf"), atomically: true, encoding: .utf8)
            return ["nginx", "-c", directory.file("nginx-\(port).conf"), "-p", directory.path, "-e", directory.file("error.log")]
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx"), "nginx-light is not installed (make test-deps)"))
    func fetchesToOneHostShareOneMultiplexedConnection() async throws {
        let directory = try TemporaryDirectory("fetchd-hdl")
        let (certificate, key) = try TestHTTPServer.selfSignedCertificate(in: directory)
        let server = try Self.startNginx(in: directory, certificate: certificate, key: key, files: 20)
        defer { server.stop() }
        // Six connections allowed to the host, yet twenty fetches at once need only one.
        let client = HTTPClient(limits: .init(maxConnections: 32, maxHostConnections: 6))
        defer { client.shutdown() }
        let versions = try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<20 {
                group.addTask {
                    var request = HTTPRequest(url: "https://127.0.0.1:\(server.port)/\(index)",
                                              outputPath: directory.file("out-\(index)"), userAgent: "test",
                                              timeoutMilliseconds: 10_000, maxBytes: 4096)
                    request.caFile = certificate
                    let response = try await client.fetch(request)
                    #expect(response.status == 200)
                    return response.httpVersion
                }
            }
            var all: [String?] = []
            for try await version in group { all.append(version) }
            return all
        }
        #expect(versions.allSatisfy { $0 == "2" }, "\(versions)")
        let log = try String(contentsOfFile: directory.file("access.log"), encoding: .utf8)
        let lines = log.split(separator: "\n")
        #expect(lines.count == 20)
        #expect(lines.allSatisfy { $0.contains("HTTP/2.0") }, "\(log)")
        let connections = Set(lines.compactMap { $0.split(separator: " ").first })
        #expect(connections.count == 1, "requests came over \(connections.count) connections:\n\(log)")
    }
}
