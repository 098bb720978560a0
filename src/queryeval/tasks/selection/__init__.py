"""The selection task — indicator (term) selection: the chosen codes against the gold set.

The task class is in :mod:`.task`; the package holds everything the task alone uses."""
