"""Hosts for tests, made of Linux network namespaces joined by veth pairs (iproute2).

One namespace is the switch (a bridge); every host is a namespace with one veth to it and an
address in 10.77.<net>.0/24. Nothing is added to the machine's own network: each veth is made
inside its host's namespace with its peer put straight into the switch's, so traffic stays inside
the namespaces the test made, and ``delete`` removes them all (their links go with them).

The database host does not run a second Postgres: it forwards its port to the test database
(on the machine's loopback), from a socket opened inside its namespace. So every other host
reaches Postgres only over its veth, and cutting a host's link cuts it from the database as a
lost network would (no reset arrives; connections hang).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _ip(*args: str, netns: str | None = None) -> None:
    argv = ["ip", *(["-n", netns] if netns else []), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")


@contextlib.contextmanager
def inside(netns: str) -> Iterator[None]:
    """Run the block with this thread in the namespace (setns is per thread): sockets it opens
    belong to the namespace for their whole life, whichever thread uses them later."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    try:
        if _libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {netns}")
        try:
            yield
        finally:
            if _libc.setns(own, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back")
    finally:
        os.close(target)
        os.close(own)


@dataclass
class Host:
    name: str
    netns: str
    address: str
    link: str  # its veth, inside its namespace
    is_cut: bool = False

    def command(self, *argv: str) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *argv]

    def cut(self) -> None:
        """The host loses the network: its link goes down (no reset reaches its peers)."""
        _ip("link", "set", self.link, "down", netns=self.netns)
        self.is_cut = True


@dataclass
class Network:
    tag: str = field(default_factory=lambda: f"ks{os.getpid() % 100000}")
    net: int = field(default_factory=lambda: 100 + os.getpid() % 100)
    hosts: dict[str, Host] = field(default_factory=dict)
    made: list[str] = field(default_factory=list)
    forwarder: Forwarder | None = None  # the database host's, once started

    @property
    def switch(self) -> str:
        return f"{self.tag}-sw"

    def start(self) -> Network:
        self._netns(self.switch)
        _ip("link", "add", "br0", "type", "bridge", netns=self.switch)
        _ip("link", "set", "br0", "up", netns=self.switch)
        return self

    def _netns(self, name: str) -> None:
        subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=20)  # a leftover
        _ip("netns", "add", name)
        self.made.append(name)
        _ip("link", "set", "lo", "up", netns=name)

    def host(self, name: str) -> Host:
        number = len(self.hosts) + 1
        netns = f"{self.tag}-{name}"
        self._netns(netns)
        link, peer = "eth0", f"p{number}"
        _ip("link", "add", link, "type", "veth", "peer", "name", peer, "netns", self.switch, netns=netns)
        _ip("link", "set", peer, "master", "br0", "up", netns=self.switch)
        address = f"10.77.{self.net}.{number}"
        _ip("addr", "add", f"{address}/24", "dev", link, netns=netns)
        _ip("link", "set", link, "up", netns=netns)
        self.hosts[name] = Host(name, netns, address, link)
        return self.hosts[name]

    def delete(self) -> None:
        for name in reversed(self.made):
            subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=20)
        self.made.clear()


class Forwarder:
    """A TCP port on a host that forwards to an address of the machine (the test database)."""

    def __init__(self, host: Host, port: int, target: tuple[str, int]):
        # A host that is a folder is Postgres's socket directory (the embedded server's).
        with inside(host.netns):
            self.listener = socket.create_server((host.address, port))
        self.target = target
        self.sockets: list[socket.socket] = []
        self.peers: dict[str, list[socket.socket]] = {}
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = self._upstream()
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self.lock:
                self.sockets += [client, upstream]
                self.peers.setdefault(client.getpeername()[0], []).extend([client, upstream])
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()

    def _upstream(self) -> socket.socket:
        host, port = self.target
        if host.startswith("/"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(10)
            sock.connect(f"{host}/.s.PGSQL.{port}")
            return sock
        return socket.create_connection(self.target, timeout=10)

    def drop(self, address: str) -> None:
        """End the database sessions of a host that was cut off, as the server does once it finds
        them dead (tcp_keepalives_*, idle_in_transaction_session_timeout): their transactions roll
        back and their row locks go. Without it they would hold them until the keepalive gave up."""
        with self.lock:
            doomed = self.peers.pop(address, [])
        for sock in doomed:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked in its thread
        self.listener.close()
        self.thread.join(timeout=5)
        with self.lock:
            for sock in self.sockets:
                with contextlib.suppress(OSError):
                    sock.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
