"""A pod's sandbox for a controller that cannot be told where to listen.

The training-operator v1.9 serves its webhooks on every interface (0.0.0.0:9443), and its health on
0.0.0.0 unless told otherwise; the box listens on 127.0.0.1 only. So it runs inside `unshare --net
--mount`: a network namespace with nothing but its own loopback, where "every interface" is that
loopback, and a mount namespace where its certificate folder is a tmpfs of its own. The file
system is otherwise shared, so Unix sockets in the box's state folder join the two sides:

- `--reach SOCKET:PORT`: in the jail, 127.0.0.1:PORT is relayed to SOCKET (the box relays that to
  the API server);
- `--expose PORT:SOCKET`: SOCKET is relayed to the jail's 127.0.0.1:PORT (the box relays a port
  of its own to SOCKET: the API server calls the webhook, the box probes health);
- `--secret NAMESPACE/NAME:FOLDER`: the kubelet's secret volume: the Secret's keys, as files in
  FOLDER (a tmpfs mounted here), kept current; read through `--api`, `--token-file`, `--ca`.

Run as `unshare --net --mount -- python -m forge.twin.jail [OPTIONS] -- COMMAND...`; it brings the
loopback up, starts the relays, runs COMMAND (which dies with it) and exits with its code.
"""
from __future__ import annotations

import argparse
import base64
import ctypes
import fcntl
import signal
import socket
import socketserver
import struct
import subprocess
import sys
import threading
from pathlib import Path

_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


def pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy one side of a TCP relay until it closes, then close both (the jail's and the box's proxies)."""
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _splice(client: socket.socket, upstream: socket.socket) -> None:
    """Copy both ways until either side closes."""
    threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
    pipe(client, upstream)


class _Relay(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        try:
            upstream = self.server.connect()  # type: ignore[attr-defined]
        except OSError:  # the other side is not listening (yet): the caller sees a closed connection
            return
        _splice(self.request, upstream)


class TcpToUnix(socketserver.ThreadingTCPServer):
    """127.0.0.1:`port` relayed to the Unix socket `path`."""

    daemon_threads = allow_reuse_address = True

    def __init__(self, port: int, path: str) -> None:
        self.path = path
        super().__init__(("127.0.0.1", port), _Relay)

    def connect(self) -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.path)
        return s

    def serve_in_background(self) -> None:
        threading.Thread(target=self.serve_forever, daemon=True).start()


class UnixToTcp(socketserver.ThreadingUnixStreamServer):
    """The Unix socket `path` relayed to 127.0.0.1:`port`."""

    daemon_threads = True

    def __init__(self, path: str, port: int) -> None:
        self.port = port
        Path(path).unlink(missing_ok=True)
        super().__init__(path, _Relay)

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port))

    def serve_in_background(self) -> None:
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        Path(self.server_address).unlink(missing_ok=True)  # type: ignore[arg-type]


def _loopback_up() -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifr = fcntl.ioctl(s, _SIOCGIFFLAGS, struct.pack("16sH", b"lo", 0))
        flags = struct.unpack("16sH", ifr[:18])[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | _IFF_UP))
    finally:
        s.close()


def _secret_volume(args: argparse.Namespace, spec: str) -> None:
    """Keep FOLDER holding the Secret's keys, as a kubelet keeps a secret volume."""
    import time

    from forge.twin.kube import ApiError, Kube

    ref, _, folder = spec.partition(":")
    namespace, _, name = ref.partition("/")
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0700", "tmpfs", str(target)], check=True)
    kube = Kube(args.api, Path(args.token_file).read_text().strip(), Path(args.ca))
    seen: dict[str, str] = {}
    while True:
        try:
            data = (kube.get("v1", "Secret", name, namespace) or {}).get("data") or {}
        except (OSError, ApiError):
            data = {}
        for key, value in data.items():
            if seen.get(key) != value:
                (target / f".{key}").write_bytes(base64.b64decode(value))
                (target / f".{key}").replace(target / key)
                seen[key] = value
        time.sleep(0.3)


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: python -m forge.twin.jail [--reach S:P] [--expose P:S] [--secret NS/N:DIR] -- COMMAND...", file=sys.stderr)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="forge.twin.jail")
    parser.add_argument("--reach", action="append", default=[])
    parser.add_argument("--expose", action="append", default=[])
    parser.add_argument("--secret", action="append", default=[])
    parser.add_argument("--api")
    parser.add_argument("--token-file")
    parser.add_argument("--ca")
    args, command = parser.parse_args(argv[:split]), argv[split + 1:]
    _loopback_up()
    for spec in args.reach:
        path, _, port = spec.rpartition(":")
        TcpToUnix(int(port), path).serve_in_background()
    for spec in args.expose:
        port, _, path = spec.partition(":")
        UnixToTcp(path, int(port)).serve_in_background()
    for spec in args.secret:
        threading.Thread(target=_secret_volume, args=(args, spec), daemon=True).start()

    def die_with_us() -> None:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)

    child = subprocess.Popen(command, preexec_fn=die_with_us)
    signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
