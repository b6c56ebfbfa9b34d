import NIOCore
import NIOExtras

/// The control socket's framing: one request per line (NIOExtras' `LineBasedFrameDecoder`), and
/// at the end of the input a last line without its newline, so a script that writes a request
/// with `printf` and shuts down its sending side (`nc -N`, socat) still gets its answer.
struct RequestLineDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    private var lines = LineBasedFrameDecoder()

    /// Passes every whole line on.
    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        try lines.decode(context: context, buffer: &buffer)
    }

    /// The input ended: the whole lines left, then what follows the last newline as a line of its own.
    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try lines.decode(context: context, buffer: &buffer) == .continue {}
        if seenEOF, buffer.readableBytes > 0, let last = buffer.readSlice(length: buffer.readableBytes) {
            context.fireChannelRead(Self.wrapInboundOut(last))
        }
        return .needMoreData
    }
}
