import NIOCore

/// A push listener handler with work to do for the life of its connection (`PushSourceGate`
/// counts the connection, `PushConnectionGuard` times its requests): it starts once the
/// connection is open, whether it already was when the handler was added or opens later, and
/// stops when the handler leaves the pipeline (the connection torn down, or the handler removed).
///
/// The extension below is the one place these NIO events are followed; a conforming handler
/// only says what starting and stopping mean for it. One instance per connection, on its event
/// loop (NIO handlers are not shared).
protocol PushConnectionLifecycle: ChannelInboundHandler {
    /// The connection is open: start. A handler added while the connection's activation passes
    /// along the pipeline hears this twice (added to an open connection, then the activation
    /// itself), so starting must bear being repeated.
    func connectionOpened(context: ChannelHandlerContext)

    /// The handler leaves the pipeline: stop, and let go of what was taken at the start.
    func handlerLeft(context: ChannelHandlerContext)
}

extension PushConnectionLifecycle {
    /// Starts when the connection is already open.
    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { connectionOpened(context: context) }
    }

    /// Starts, then passes the event on.
    func channelActive(context: ChannelHandlerContext) {
        connectionOpened(context: context)
        context.fireChannelActive()
    }

    /// Stops.
    func handlerRemoved(context: ChannelHandlerContext) {
        handlerLeft(context: context)
    }
}
