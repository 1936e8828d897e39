"""The query of configs/csv-python-join.yaml: each order with its customer's name and city.

A deployment's ``python:`` function is called with its sources as keyword arguments, each a
``dw.Table`` named as in the file, and returns the table to write.
"""

import darwin as dw
from darwin import col


def orders_with_customers(orders: dw.Table, customers: dw.Table) -> dw.Table:
    """Orders of known customers (an inner join: an order of an unknown customer is left out)."""
    return (orders.join(customers.lookup(), on=[("customer_id", "id")])
            .select("order_id", "ts", "name", "city", amount=col("amount")))
