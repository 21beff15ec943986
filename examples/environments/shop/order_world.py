"""A tau-bench-style world: a small order database built per sample from its row (``orders``), four tools (the
public methods: their signatures and docstrings are the schemas the model sees) with a shop's rules, and its final
state (``state()``) scored by ``state_match`` against the row's ``expected_state``."""

from __future__ import annotations

import copy
from typing import Any


class OrderWorld:
    """A shop's orders. Pending orders can be cancelled or re-addressed; delivered ones refunded, up to their price."""

    def __init__(self, row: dict[str, Any]) -> None:
        self.orders: dict[str, dict[str, Any]] = {o["id"]: copy.deepcopy(o) for o in row["orders"]}

    def _order(self, order_id: str) -> dict[str, Any]:
        if order_id not in self.orders:
            raise ValueError(f"no order {order_id!r}")
        return self.orders[order_id]

    def get_order(self, order_id: str) -> dict[str, Any]:
        """Look up an order by its id: its status, address, price and refunded amount.

        Args:
            order_id: the order's id, such as "O1".
        """
        return dict(self._order(order_id))

    def cancel_order(self, order_id: str, reason: str) -> str:
        """Cancel a pending order.

        Args:
            order_id: the order's id.
            reason: why the customer cancels ("no longer needed" or "ordered by mistake").
        """
        order = self._order(order_id)
        if order["status"] != "pending":
            raise ValueError(f"order {order_id} is {order['status']}; only pending orders can be cancelled")
        if reason not in ("no longer needed", "ordered by mistake"):
            raise ValueError("reason must be 'no longer needed' or 'ordered by mistake'")
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        return f"order {order_id} cancelled"

    def change_address(self, order_id: str, address: str) -> str:
        """Change the delivery address of a pending order.

        Args:
            order_id: the order's id.
            address: the new address, one line.
        """
        order = self._order(order_id)
        if order["status"] != "pending":
            raise ValueError(f"order {order_id} is {order['status']}; its address cannot change")
        order["address"] = address
        return f"order {order_id} will go to {address}"

    def refund(self, order_id: str, amount: float) -> str:
        """Refund part or all of a delivered order's price.

        Args:
            order_id: the order's id.
            amount: how much to refund, at most the price not yet refunded.
        """
        order = self._order(order_id)
        if order["status"] != "delivered":
            raise ValueError(f"order {order_id} is {order['status']}; only delivered orders are refunded")
        if amount <= 0 or order["refunded"] + amount > order["price"] + 1e-9:
            raise ValueError(f"a refund must be positive and at most {order['price'] - order['refunded']:.2f}")
        order["refunded"] = round(order["refunded"] + amount, 2)
        return f"refunded {amount:.2f} on order {order_id}"

    def state(self) -> dict[str, Any]:
        """The database as scored: every order by id."""
        return {"orders": copy.deepcopy(self.orders)}
