-- A small company for the --test-suite example (docs/test-suite.md); build it with:
--   python examples/testsuite/build_db.py
CREATE TABLE dept (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
INSERT INTO dept VALUES (1, 'sales'), (2, 'research');
CREATE TABLE emp (id INTEGER PRIMARY KEY, name TEXT NOT NULL, salary INTEGER,
                  dept_id INTEGER REFERENCES dept(id),
                  manager_id INTEGER REFERENCES emp(id));
INSERT INTO emp VALUES
  (1, 'alice', 90, 1, NULL),
  (2, 'bob', 120, 1, 1),
  (3, 'carol', 150, 2, 1),
  (4, 'dave', 80, 2, 3),
  (5, 'erin', NULL, NULL, 3);
