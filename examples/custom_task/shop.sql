-- A tiny shop: the database the example suite's queries run on (built in memory per query).
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL,
                       price REAL NOT NULL);
INSERT INTO products VALUES
  (1, 'apple', 'fruit', 0.5), (2, 'pear', 'fruit', 0.75), (3, 'kale', 'vegetable', 2.2),
  (4, 'leek', 'vegetable', 1.3), (5, 'brie', 'cheese', 4.1), (6, 'feta', 'cheese', 3.35);
CREATE TABLE sales (product_id INTEGER NOT NULL REFERENCES products(id), qty INTEGER NOT NULL);
INSERT INTO sales VALUES (1, 10), (1, 5), (2, 3), (3, 7), (5, 2), (6, 4), (6, 1);
