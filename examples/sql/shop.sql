-- A tiny shop for the text-to-SQL example; build it with: python build_db.py
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL,
                    price REAL NOT NULL);
INSERT INTO items VALUES
  (1, 'carrot', 'vegetable', 0.5),
  (2, 'onion', 'vegetable', 0.4),
  (3, 'saffron', 'spice', 9.99),
  (4, 'pepper', 'spice', 3.25),
  (5, 'apple', 'fruit', 0.8),
  (6, 'mango', 'fruit', 1.75);
CREATE TABLE sales (item_id INTEGER NOT NULL REFERENCES items(id), day TEXT NOT NULL,
                    quantity INTEGER NOT NULL);
INSERT INTO sales VALUES
  (1, '2024-01-02', 10), (2, '2024-01-02', 4), (3, '2024-01-02', 1),
  (1, '2024-01-03', 7), (5, '2024-01-03', 12), (6, '2024-01-03', 2), (4, '2024-01-04', 3);
