"""Test hosts in Linux network namespaces: each node (ZooKeeper, a broker, the clients) gets a namespace of
its own with one address, all joined by a bridge in a namespace of their own (the switch), so nothing
reaches or leaves the machine's real network. Addresses come from 198.18.0.0/15, the range set aside for
network testing (RFC 2544), and exist only inside these namespaces.

Faults are made with nothing but iproute2 (this kernel has no netfilter or traffic-control modules):
  - cut(a, b): each side's neighbour entry for the other points at a MAC address nobody has, so frames
    between the two are silently lost in the switch, as a broken link or a dropping firewall loses them
    (TCP sees time-outs, never a reset);
  - heal(): every such entry is removed and ARP finds the real addresses again.
Everything made is removed by close(), also after a failure."""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

SUBNET = "198.18.0"
NOWHERE_MAC = "02:00:00:00:de:ad"  # locally administered, owned by no interface


class NetnsUnavailable(Exception):
    """Namespaces cannot be made here (not root, or a kernel without them); the message says why."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and res.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {res.stderr.strip() or res.returncode}")
    return res


def unavailable_reason() -> str | None:
    """Why namespaces cannot be used here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns)"
    probe = f"odrprobe{os.getpid()}"
    try:
        res = _ip("netns", "add", probe, check=False)
    except FileNotFoundError:
        return "iproute2's ip is not installed"
    if res.returncode != 0:
        return f"ip netns add failed: {res.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


@dataclass
class Node:
    name: str
    namespace: str
    address: str
    device: str  # the node's end of its veth pair
    cut_from: set[str] = field(default_factory=set)  # names of the nodes it cannot reach now

    def exec_prefix(self) -> list[str]:
        """Prefix a command with this to run it inside the node's namespace."""
        return ["ip", "netns", "exec", self.namespace]


class Network:
    """A switch and the nodes attached to it; `cut` and `heal` change who reaches whom."""

    _ids = itertools.count(1)

    def __init__(self, tag: str | None = None) -> None:
        self.tag = tag or f"odr{os.getpid() % 100000}x{next(self._ids)}"
        self.switch = f"{self.tag}-sw"
        self.nodes: dict[str, Node] = {}
        self._created: list[str] = []
        _ip("netns", "add", self.switch)
        self._created.append(self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")

    def add(self, name: str) -> Node:
        index = len(self.nodes) + 1
        ns = f"{self.tag}-{name}"
        _ip("netns", "add", ns)
        self._created.append(ns)
        dev, peer = f"v{index}", f"{self.tag[-6:]}p{index}"[-15:]
        _ip("link", "add", dev, "netns", ns, "type", "veth", "peer", "name", peer, "netns", self.switch)
        _ip("-n", self.switch, "link", "set", peer, "master", "br0")
        _ip("-n", self.switch, "link", "set", peer, "up")
        address = f"{SUBNET}.{index}"
        _ip("-n", ns, "addr", "add", f"{address}/24", "dev", dev)
        _ip("-n", ns, "link", "set", dev, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        node = self.nodes[name] = Node(name, ns, address, dev)
        return node

    # ---- faults --------------------------------------------------------------------------------
    def cut(self, a: str, b: str) -> None:
        """No packet passes between `a` and `b` (both ways), silently."""
        na, nb = self.nodes[a], self.nodes[b]
        for src, dst in ((na, nb), (nb, na)):
            _ip("-n", src.namespace, "neigh", "replace", dst.address, "lladdr", NOWHERE_MAC, "nud", "permanent",
                "dev", src.device)
            src.cut_from.add(dst.name)

    def isolate(self, name: str) -> None:
        for other in self.nodes:
            if other != name:
                self.cut(name, other)

    def split(self, side: list[str]) -> None:
        """Nodes in `side` reach each other only; the rest reach each other only."""
        for a in side:
            for b in self.nodes:
                if b not in side:
                    self.cut(a, b)

    def heal(self) -> None:
        for node in self.nodes.values():
            for other in list(node.cut_from):
                _ip("-n", node.namespace, "neigh", "del", self.nodes[other].address, "dev", node.device, check=False)
            node.cut_from.clear()

    def close(self) -> None:
        for ns in reversed(self._created):
            _ip("netns", "del", ns, check=False)
        self._created.clear()


@contextmanager
def network(*names: str) -> Iterator[Network]:
    """A network with these nodes, removed afterwards."""
    net = Network()
    try:
        for name in names:
            net.add(name)
        yield net
    finally:
        net.close()
