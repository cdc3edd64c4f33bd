"""Helpers shared by DashDish's eval scripts (importable because a script's folder is on sys.path).

They read the /finish shape REAL's DashDish scripts read too: the orders placed during the
episode are differences.foodOrders.added (a map of order id -> order) and
initialfinaldiff.added.cart.foodOrders; an order is {orderId, restaurantName, cartItems[{name,
size, price, quantity, restaurantName}], checkoutDetails {shipping {shippingOption,
deliveryOption}, charges {subtotal, ..., tip, totalAmount}}} with amounts in dollars.
"""

import json
import re


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except Exception:
        return {}


def placed_orders(data):
    """Orders placed during the episode, each once."""
    found = {}
    added = ((data.get("differences") or {}).get("foodOrders") or {}).get("added") or {}
    diff = (((data.get("initialfinaldiff") or {}).get("added") or {}).get("cart") or {}).get("foodOrders") or {}
    for source in (added, diff):
        if isinstance(source, dict):
            for key, order in source.items():
                if isinstance(order, dict):
                    found.setdefault(order.get("orderId") or key, order)
    return list(found.values())


def text(value):
    return re.sub(r"\s+", " ", str(value or "")).strip().lower()


def shipping(order):
    s = (order.get("checkoutDetails") or {}).get("shipping") or {}
    return text(s.get("shippingOption")), text(s.get("deliveryOption"))


def charge(order, name):
    try:
        return round(float(((order.get("checkoutDetails") or {}).get("charges") or {}).get(name)), 2)
    except (TypeError, ValueError):
        return None


def items(order):
    """{(name, size): quantity} of the order's lines, lower-cased."""
    out = {}
    for it in order.get("cartItems") or []:
        if isinstance(it, dict):
            k = (text(it.get("name")), text(it.get("size")))
            out[k] = out.get(k, 0) + int(it.get("quantity") or 0)
    return out


def answer(data):
    return re.sub(r"\s+", " ", str(data.get("answer") or "")).strip()


def amount(value):
    """A dollar amount in a text ('$34.34', '34.34 dollars') as a float, or None."""
    m = re.search(r"\d[\d,]*(?:\.\d+)?", str(value or ""))
    return round(float(m.group(0).replace(",", "")), 2) if m else None


def report(ok):
    print("SUCCESS" if ok else "FAILURE")  # noqa: T201 (agisdk reads the verdict from stdout)
