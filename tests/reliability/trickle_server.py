"""A management API that trickles, for the deadline tests.

`python -m tests.reliability.trickle_server MODE SECONDS` listens on 127.0.0.1 (a free port,
printed on the first line) and answers every request one byte every SECONDS, for ever. MODE
`body`: whole headers, then a 100,000-byte body a byte at a time; `headers`: the status line,
then a header a byte at a time. Started and stopped (by PID) by the test."""

from __future__ import annotations

import socket
import sys
import threading
import time

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"


def trickle(connection: socket.socket, mode: str, seconds: float) -> None:
    """Answer one connection a byte every `seconds` until the client goes away."""
    with connection:
        try:
            connection.recv(65536)
            if mode == "body":
                connection.sendall(HEAD + b"Content-Length: 100000\r\n\r\n")
                drip = b"{"
            else:
                connection.sendall(HEAD + b"X-Slow: ")
                drip = b"a"
            while True:
                connection.sendall(drip)
                time.sleep(seconds)
        except OSError:  # the client closed: done
            return


def main() -> None:
    """Serve until killed."""
    mode, seconds = sys.argv[1], float(sys.argv[2])
    server = socket.create_server(("127.0.0.1", 0))
    print(server.getsockname()[1], flush=True)
    while True:
        connection, _ = server.accept()
        threading.Thread(target=trickle, args=(connection, mode, seconds), daemon=True).start()


if __name__ == "__main__":
    main()
