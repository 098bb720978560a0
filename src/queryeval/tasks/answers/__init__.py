"""The answers task — closed-form answers: a number, a list, a date or a word checked against the gold.

The task class is in :mod:`.task`; the package holds everything the task alone uses."""
