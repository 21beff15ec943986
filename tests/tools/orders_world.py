"""A small order database as a stateful tool world (tau-bench style), for the world tests."""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from assay.tools import tool


class Orders:
    """Orders by id, each with a status and items."""

    def __init__(self, row: dict[str, Any]) -> None:
        self.orders: dict[str, dict[str, Any]] = row["orders"]
        self.log: list[str] = []
        self._secret = "hidden"

    def get_order(self, order_id: str) -> dict[str, Any]:
        """Look up an order.

        Args:
            order_id: The order's id, e.g. "A1".
        """
        if order_id not in self.orders:
            raise KeyError(f"no order {order_id}")
        return self.orders[order_id]

    def cancel_order(self, order_id: str, reason: Literal["no longer needed", "ordered by mistake"]) -> str:
        """Cancel a pending order.

        Args:
            order_id: The order to cancel.
            reason: Why the customer cancels.
        """
        order = self.get_order(order_id)
        if order["status"] != "pending":
            raise ValueError(f"order {order_id} is {order['status']}, only pending orders can be cancelled")
        order["status"] = "cancelled"
        self.log.append(f"cancel {order_id}: {reason}")
        return "cancelled"

    async def add_item(self, order_id: str, item: str, quantity: int = 1) -> list[str]:
        """Add an item to an order.

        Args:
            order_id: The order.
            item: The item's name.
            quantity: How many.
        """
        await asyncio.sleep(0)
        items: list[str] = self.get_order(order_id)["items"]
        items.extend([item] * quantity)
        return items

    def _audit(self) -> None:
        """Not a tool (private)."""

    def state(self) -> dict[str, Any]:
        """The state scored after the loop (not a tool)."""
        return {"orders": self.orders, "log": self.log}


def make(row: dict[str, Any]) -> Orders:
    """A function factory: the class comes from the return annotation."""
    return Orders(row)


def make_unknown(row: dict[str, Any]):  # type: ignore[no-untyped-def]
    return Orders(row)


class Marked:
    """Only the marked method is a tool."""

    def __init__(self, row: dict[str, Any]) -> None:
        self.count = 0

    @tool
    def bump(self) -> int:
        """Count one more."""
        self.count += 1
        return self.count

    def reset(self) -> None:
        """Helper, not offered because another method is marked."""
        self.count = 0


@dataclass
class Ledger:
    """A dataclass world."""

    balance: int = 0
    tags: set[str] = field(default_factory=set)
    opened: datetime.date = datetime.date(2026, 1, 2)

    def deposit(self, amount: int) -> int:
        """Deposit money.

        Args:
            amount: How much.
        """
        self.balance += amount
        return self.balance


class Account(BaseModel):
    """A pydantic world."""

    owner: str
    balance: int = 0

    def withdraw(self, amount: int) -> int:
        """Withdraw money."""
        if amount > self.balance:
            raise ValueError("insufficient funds")
        self.balance -= amount
        return self.balance


class Plain:
    """A plain object: its public plain-data attributes are its state."""

    def __init__(self) -> None:
        self.name = "x"
        self.items = ("a", "b")
        self.lock = asyncio.Lock()  # not data: left out
        self._private = 1

    def noop(self) -> None:
        """Nothing."""
