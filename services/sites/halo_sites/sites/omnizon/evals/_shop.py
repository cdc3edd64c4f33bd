"""Helpers shared by Omnizon's eval scripts (importable because a script's folder is on sys.path).

They read REAL's /finish shape: differences.cart.{added,updated,deleted} (cart lines
{id, name, price, quantity}) and differences.orders.added (orders placed during the episode:
{id, items, total, shippingAddress, payment}). The final cart is the task's initial cart with
these differences applied.
"""

import json
import re


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except Exception:
        return {}


def _diff(data, collection):
    d = ((data.get("differences") or {}).get(collection)) or {}
    return {k: [r for r in (d.get(k) or []) if isinstance(r, dict)] for k in ("added", "updated", "deleted")}


def final_cart(data, initial=None):
    """{product id: quantity} after the episode, from the task's initial cart and the diff."""
    cart = dict(initial or {})
    d = _diff(data, "cart")
    for line in d["deleted"]:
        cart.pop(line.get("id"), None)
    for line in d["added"] + d["updated"]:
        cart[line.get("id")] = line.get("quantity")
    return cart


def new_orders(data):
    """Orders placed during the episode (whole records)."""
    return _diff(data, "orders")["added"]


def order_items(order):
    """{product id: quantity} of one order."""
    out = {}
    for it in order.get("items") or []:
        if isinstance(it, dict):
            out[it.get("id")] = out.get(it.get("id"), 0) + (it.get("quantity") or 0)
    return out


def text(value):
    """Lower case, punctuation dropped, spaces collapsed: '12 Oak Lane,' == '12 oak lane'."""
    return re.sub(r"\s+", " ", re.sub(r"[.,#]", " ", str(value or ""))).strip().lower()


def address_is(order, full_name, street, city, state, zip_code):
    a = order.get("shippingAddress") or {}
    want = {"fullName": full_name, "street": street, "city": city, "state": state, "zip": zip_code}
    return all(text(a.get(k)) == text(v) for k, v in want.items())


def paid_with(order, last4, name_on_card, expiry):
    p = order.get("payment") or {}
    return str(p.get("cardLast4")) == last4 and text(p.get("nameOnCard")) == text(name_on_card) and text(p.get("expiry")) == text(expiry)


def answer(data):
    return re.sub(r"\s+", " ", str(data.get("answer") or "")).strip()


def price_in(value):
    """The first amount in a text ('$45.99', '45.99 USD') as a float, or None."""
    m = re.search(r"\d[\d,]*(?:\.\d+)?", str(value or ""))
    return float(m.group(0).replace(",", "")) if m else None


def report(ok):
    print("SUCCESS" if ok else "FAILURE")
