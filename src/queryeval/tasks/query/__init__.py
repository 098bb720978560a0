"""The query task — predicted SPARQL/SQL: result tables, execution, test-suite neighbours, audits.

The task class is in :mod:`.task`; the package holds everything the task alone uses."""
