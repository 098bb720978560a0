"""A toy text-to-SQL system for the custom task example: keyword -> SQL.

It rounds the average price to one decimal (3.7 instead of 3.725: right within rel_tol=0.01,
wrong at the default tolerance), and misses one product in "more than 2" (``>= 2.5``)."""

from __future__ import annotations

ANSWERS = {
    "fruits": "SELECT name FROM products WHERE category = 'fruit' ORDER BY name DESC",
    "average price": "SELECT ROUND(AVG(price), 1) FROM products WHERE category = 'cheese'",
    "per category": "SELECT p.category, SUM(s.qty) FROM products p JOIN sales s "
                    "ON s.product_id = p.id GROUP BY p.category ORDER BY 2",
    "more than 2": "SELECT name FROM products WHERE price >= 2.5",
}


def answer(request: dict) -> dict:
    question = request["question"].lower()
    for key, sql in ANSWERS.items():
        if key in question:
            return {"query": sql}
    return {"query": "SELECT 1"}
