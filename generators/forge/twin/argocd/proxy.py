"""Argo CD out of the cluster reaches `https://kubernetes.default.svc` (the destination forge's
Applications name) through this CONNECT proxy on 127.0.0.1, which opens only that host to the box's
API server (whose serving certificate names kubernetes.default.svc). Box-only: the components get
HTTPS_PROXY; everything on 127.0.0.1 bypasses it (NO_PROXY)."""
from __future__ import annotations

import socket
import socketserver
import threading

from forge.twin.jail import pipe

TARGET = b"kubernetes.default.svc:443"


def serve(api_port: int) -> tuple[socketserver.ThreadingTCPServer, int]:
    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 8192:
                chunk = self.request.recv(1024)
                if not chunk:
                    return
                head += chunk
            words = head.split(b"\r\n", 1)[0].split()
            if len(words) < 2 or words[0] != b"CONNECT" or words[1] != TARGET:
                self.request.sendall(b"HTTP/1.1 403 Forbidden\r\n\r\n")
                return
            upstream = socket.create_connection(("127.0.0.1", api_port))
            self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            t = threading.Thread(target=pipe, args=(upstream, self.request), daemon=True)
            t.start()
            pipe(self.request, upstream)
            t.join()

    socketserver.ThreadingTCPServer.daemon_threads = True
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]
