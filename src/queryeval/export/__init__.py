"""Exports in other tools' formats, so their users can switch without changing scripts."""
