"""free_ports: the one way tests, benchmarks and the harness pick loopback ports."""

from __future__ import annotations

import socket

from kubesched.harness.ports import free_port, free_ports


def test_ports_chosen_together_are_distinct_and_bindable() -> None:
    ports = free_ports(20)
    assert len(set(ports)) == 20
    with socket.socket() as s:
        s.bind(("127.0.0.1", free_port()))
