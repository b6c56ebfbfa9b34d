#!/usr/bin/env python3
"""The loopback HTTP server of the soak run (soak_torture.py): every path an http handler can meet.

    /static/N    the same body (1 to 32 KiB) for ever, with an ETag: 304 once fetchd has it (noData)
    /changing/N  a body that changes every N-th period (ETag too): newData, then 304s until it changes
    /gzip/N      a changing text of 64 to 256 KiB, gzip-encoded when the client accepts it
    /redirect/N  302 to /static/N
    /cached/N    /static/N with `Cache-Control: max-age=30`: a server floor on the next fetch
    /missing/N   404 (failed)
    /busy/N      503 with `Retry-After: 10` (failed, and a server floor)
    /slow/N      answers after 20 s, past the handler's deadline (expired)
    /hangup/N    closes the connection without an answer (failed)

Run it as a program: it prints its port on the first line of stdout and serves until killed.
It keeps connections alive (HTTP/1.1), as a real server would, so fetchd's connection cache is
part of what the soak measures.
"""
import gzip, hashlib, random, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHANGE_PERIOD_SECONDS = 15.0


def static_body(number):
    rng = random.Random(number)
    return bytes(rng.randrange(32, 127) for _ in range(rng.randint(1, 32) * 1024))


def changing_body(number, size):
    # Handler N's content changes every (N % 8 + 1) periods: some at every fetch, some rarely.
    generation = int(time.time() / (CHANGE_PERIOD_SECONDS * (number % 8 + 1)))
    line = f"handler {number} generation {generation}\n".encode()
    return line * (size // len(line) + 1)


class SoakRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        try:
            kind, number = self.path.strip("/").split("/")[:2]
            number = int(number)
        except ValueError:
            return self.answer(404, b"no such path\n")
        if kind == "static":
            self.answer_content(static_body(number))
        elif kind == "changing":
            self.answer_content(changing_body(number, 2048))
        elif kind == "gzip":
            body = changing_body(number, (number % 4 + 1) * 64 * 1024)
            if "gzip" in (self.headers.get("Accept-Encoding") or ""):
                self.answer_content(gzip.compress(body, compresslevel=1), {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
            else:
                self.answer_content(body)
        elif kind == "redirect":
            self.answer(302, b"", {"Location": f"/static/{number}"})
        elif kind == "cached":
            self.answer_content(static_body(number), {"Cache-Control": "max-age=30"})
        elif kind == "busy":
            self.answer(503, b"busy\n", {"Retry-After": "10"})
        elif kind == "slow":
            time.sleep(20)
            self.answer(200, b"too late\n")
        elif kind == "hangup":
            self.close_connection = True
        else:
            self.answer(404, b"no such thing\n")

    def answer_content(self, body, headers=None):
        tag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        if self.headers.get("If-None-Match") == tag:
            return self.answer(304, b"", {"ETag": tag, **(headers or {})})
        self.answer(200, body, {"ETag": tag, **(headers or {})})

    def answer(self, status, body, headers=None):
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if status != 304:  # a 304 has no body, and its length would be the stored one's
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if status != 304:
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (a slow answer past its deadline)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), SoakRequestHandler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
