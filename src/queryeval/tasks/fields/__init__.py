"""The fields task — field-value retrieval: candidates per field scored against the field's gold values.

The task class is in :mod:`.task`; the package holds everything the task alone uses."""
