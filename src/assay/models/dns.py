"""Host names resolved in a thread the HTTP client owns and ends when it closes.

aiohttp's default resolver runs ``getaddrinfo`` in the event loop's default executor, whose thread outlives the
client. A process with another thread must not fork (:func:`assay.forking.other_threads`), so that thread would
keep the results of every online run in one process. This resolver does what aiohttp's threaded one does, in an
executor of its own that :meth:`close` shuts down.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from aiohttp.abc import AbstractResolver, ResolveResult

_ADDRCONFIG = getattr(socket, "AI_ADDRCONFIG", 0)
_NUMERIC_HOST = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV
_NUMERIC_NAME = socket.NI_NUMERICHOST | socket.NI_NUMERICSERV
T = TypeVar("T")


class OwnThreadResolver(AbstractResolver):
    """aiohttp's ThreadedResolver, with ``getaddrinfo`` in a one-thread executor owned (and ended) by the client."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None

    def _run(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="assay-dns")
        return asyncio.get_running_loop().run_in_executor(self._executor, fn)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """Every address of ``host`` (as aiohttp's ThreadedResolver lists them)."""
        lookup = partial(socket.getaddrinfo, host, port, family, socket.SOCK_STREAM, 0, _ADDRCONFIG)
        infos: list[tuple[Any, ...]] = await self._run(lookup)
        hosts: list[ResolveResult] = []
        for found_family, _, proto, _, address in infos:
            resolved: str
            port_number: int
            if found_family == socket.AF_INET6:
                if len(address) < 3:  # IPv6 not supported by this Python, or not enabled on the host
                    continue
                if address[3]:  # a link-local address: its scope needs the name lookup
                    name_lookup = partial(socket.getnameinfo, address, _NUMERIC_NAME)
                    name: tuple[str, str] = await self._run(name_lookup)
                    resolved, port_number = name[0], int(name[1])
                else:
                    resolved, port_number = address[:2]
            else:
                resolved, port_number = address
            hosts.append(
                ResolveResult(
                    hostname=host,
                    host=resolved,
                    port=port_number,
                    family=found_family,
                    proto=proto,
                    flags=_NUMERIC_HOST,
                )
            )
        return hosts

    async def close(self) -> None:
        """End the thread (it waits for a lookup under way, which none is once the client's session closed)."""
        self.shutdown(wait=True)

    def shutdown(self, *, wait: bool) -> None:
        """End the thread from outside the event loop (a client left by a finished loop)."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=wait)
