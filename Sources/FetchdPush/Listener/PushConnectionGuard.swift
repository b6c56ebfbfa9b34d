import FetchdCore
import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Bounds what one connection to the push listener may cost, below the HTTP handling:
///
/// - a request must arrive whole (request line, headers and body) within `readTimeout` of the
///   connection opening or of the previous response, so a client that trickles bytes (or just
///   holds the connection idle) is answered 408 and closed instead of holding a connection;
/// - headers over the decoder's limit are answered 431 and closed (the decoder cannot go on);
/// - a response marked `Connection: close` (every refusal) closes the connection once written,
///   so the rest of a refused body is never read.
///
/// One instance per connection, on its event loop (NIO handlers are not shared). The first
/// request's deadline starts once the connection is open, and whatever deadline runs stops when
/// the handler leaves the pipeline (`PushConnectionLifecycle`).
final class PushConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler, PushConnectionLifecycle {
    /// Request parts, after HTTP/1 decoding.
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum Phase {
        /// Waiting for a request, or reading one: the deadline runs.
        case reading
        /// The request is read; the response is being made (the deadline is ours, not the client's).
        case responding
    }

    private let readTimeout: TimeAmount
    private var phase = Phase.reading
    private var deadline: Scheduled<Void>?
    private var closeAfterResponse = false

    /// A guard giving each request `readTimeout` to arrive.
    init(readTimeout: TimeAmount) {
        self.readTimeout = readTimeout
    }

    /// Starts the first request's deadline.
    func connectionOpened(context: ChannelHandlerContext) {
        startDeadline(context)
    }

    /// Stops the deadline.
    func handlerLeft(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    /// A request read to its end stops its deadline: the response is ours to make.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) {
            phase = .responding
            deadline?.cancel()
            deadline = nil
        }
        context.fireChannelRead(data)
    }

    /// A response stops the deadline; its end starts the next request's, or closes the connection.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            // A refusal may come before the request's end: from here on the time is ours.
            phase = .responding
            deadline?.cancel()
            deadline = nil
            if head.headerFields[.connection] == "close" { closeAfterResponse = true }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            if closeAfterResponse {
                context.writeAndFlush(data, promise: promise)
                context.close(promise: nil)
                return
            }
            context.write(data, promise: promise)
            // Keep-alive: the next request gets a deadline of its own.
            phase = .reading
            startDeadline(context)
        }
    }

    /// Headers over the limit: 431 and close (the decoder cannot go on); other errors pass on.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError, parserError == .headerOverflow else {
            context.fireErrorCaught(error)
            return
        }
        refuse(context, status: .requestHeaderFieldsTooLarge)
    }

    private func startDeadline(_ context: ChannelHandlerContext) {
        deadline?.cancel()
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: readTimeout) {
            let (handler, context) = loopBound.value
            handler.deadline = nil
            if handler.phase == .reading { handler.refuse(context, status: .requestTimeout) }
        }
    }

    /// Answers `status` (no body) and closes the connection.
    private func refuse(_ context: ChannelHandlerContext, status: HTTPResponse.Status) {
        deadline?.cancel()
        deadline = nil
        phase = .responding
        let head = HTTPResponse(status: status, headerFields: [
            .connection: "close", .contentLength: "0", .date: HTTPDate.text(Date()),
        ])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.close(promise: nil)
    }
}
