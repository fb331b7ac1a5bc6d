import BlepayConfiguration
import Foundation
import Logging
import NIOCore
import NIOSSL
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The ledger's TLS certificate chain and private key, read from their PEM files and read again at a new
/// connection when either file changed, so that a renewed certificate is served without a restart. A renewal that
/// cannot be used (unreadable, not PEM, a key that is not the certificate's) is logged and the certificate in use
/// is kept. The key is never logged.
final class ServerCertificate: Sendable {
    private struct Loaded: Sendable {
        var chain: [NIOSSLCertificate]
        var key: NIOSSLPrivateKey
    }

    /// What identifies a file's content without reading it: a renewal written in place or renamed over it changes it.
    private struct Stamp: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: Int64
        var modifiedNanoseconds: Int64

        init?(_ path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modified = Int64(info.st_mtim.tv_sec)
            modifiedNanoseconds = Int64(info.st_mtim.tv_nsec)
        }
    }

    private struct State: Sendable {
        var loaded: Loaded
        /// The files' stamps when last read, whether that reading was used or refused.
        var stamps: [Stamp?]
    }

    let certificatePath: String
    let keyPath: String
    private let state: Mutex<State>
    private let logger: Logger

    /// Reads both files; one that cannot be used is a `ConfigurationError` naming `[tls]`'s key in `file`.
    init(certificatePath: String, keyPath: String, file: String, logger: Logger) throws(ConfigurationError) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.logger = logger
        let stamps = [Stamp(certificatePath), Stamp(keyPath)]
        do {
            state = Mutex(State(loaded: try Self.load(certificatePath, keyPath), stamps: stamps))
        } catch {
            throw ConfigurationError(file: file, key: "tls.\(error.key)", reason: error.reason)
        }
    }

    /// TLS 1.2 or later with the current certificate, asking for the files' latest at each new connection.
    func serverConfiguration() -> TLSConfiguration {
        let loaded = state.withLock { $0.loaded }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: loaded.chain.map { .certificate($0) }, privateKey: .privateKey(loaded.key))
        tls.minimumTLSVersion = .tlsv12
        // A closing connection's wait for the client's close_notify: HTTP answers are complete by then, and a client
        // that keeps its connection would otherwise hold a stopping ledger 5 s (NIO SSL's default) per connection.
        tls.shutdownTimeout = .seconds(1)
        tls.sslContextCallback = { [self] _, promise in
            let loaded = current()
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = loaded.chain.map { .certificate($0) }
            override.privateKey = .privateKey(loaded.key)
            promise.succeed(override)
        }
        return tls
    }

    /// The certificate to serve now: read again if a file changed since it was last read.
    private func current() -> Loaded {
        let stamps = [Stamp(certificatePath), Stamp(keyPath)]
        return state.withLock { state in
            guard stamps != state.stamps else { return state.loaded }
            state.stamps = stamps
            do throws(Failure) {
                state.loaded = try Self.load(certificatePath, keyPath)
                logger.info("TLS certificate renewed", metadata: [
                    "certificate_file": "\(certificatePath)",
                    "serial": "\(state.loaded.chain[0].serialNumber.map { String(format: "%02x", $0) }.joined())",
                ])
            } catch {
                // A renewal half-written, or key and certificate replaced one after the other: the next change is
                // read again; until then the certificate that worked is kept.
                logger.error("TLS certificate not renewed: keeping the one in use", metadata: [
                    "file": "\(error.key == "key_file" ? keyPath : certificatePath)", "error": "\(error.reason)",
                ])
            }
            return state.loaded
        }
    }

    private struct Failure: Error {
        let key: String
        let reason: String
    }

    private static func load(_ certificatePath: String, _ keyPath: String) throws(Failure) -> Loaded {
        let chain: [NIOSSLCertificate]
        do { chain = try NIOSSLCertificate.fromPEMFile(certificatePath) } catch {
            throw Failure(key: "certificate_file", reason: "names \(certificatePath), which is not a readable PEM certificate: \(error)")
        }
        guard !chain.isEmpty else {
            throw Failure(key: "certificate_file", reason: "names \(certificatePath), which holds no certificate")
        }
        let key: NIOSSLPrivateKey
        // The error is not shown: it could quote the key's bytes.
        do { key = try NIOSSLPrivateKey(file: keyPath, format: .pem) } catch {
            throw Failure(key: "key_file", reason: "names \(keyPath), which is not a readable PEM private key")
        }
        // BoringSSL refuses a key that is not the leaf certificate's when both go into one context.
        do {
            _ = try NIOSSLContext(configuration: .makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key)))
        } catch {
            throw Failure(key: "key_file", reason: "names \(keyPath), which is not the key of the certificate in \(certificatePath)")
        }
        return Loaded(chain: chain, key: key)
    }
}
