"""The freeform task — free-form answers: claims read off the text and checked against the reference.

The task class is in :mod:`.task`; the package holds everything the task alone uses."""
