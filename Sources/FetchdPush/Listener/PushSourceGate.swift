import NIOCore

/// Closes a push listener connection at once when its source already holds its share of the
/// listener's connections (`PushSourceLimits`), and gives the share back when it closes. It
/// closes a refused connection as soon as it is active, before a request is read
/// (`PushConnectionLifecycle`).
final class PushSourceGate: ChannelInboundHandler, RemovableChannelHandler, PushConnectionLifecycle {
    /// Raw bytes: the gate reads nothing, it only counts.
    typealias InboundIn = NIOAny

    private let limits: PushSourceLimits
    private var counted: PushSourceLimits.Source?
    private var checked = false

    /// A gate counting against `limits` (one per connection: NIO handlers are not shared).
    init(limits: PushSourceLimits) {
        self.limits = limits
    }

    /// Checks the source: counts the connection, or closes it when the source holds its share.
    func connectionOpened(context: ChannelHandlerContext) {
        guard !checked else { return }
        checked = true
        guard let source = PushSourceLimits.Source(context.channel.remoteAddress) else { return }
        if limits.connectionOpened(from: source) {
            counted = source
        } else {
            context.close(promise: nil)
        }
    }

    /// Gives the share back.
    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    /// Gives the share back (the pipeline is torn down without an inactive event too).
    func handlerLeft(context: ChannelHandlerContext) {
        release()
    }

    private func release() {
        if let counted { limits.connectionClosed(from: counted) }
        counted = nil
    }
}
