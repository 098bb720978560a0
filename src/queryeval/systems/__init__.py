"""The system under test behind one small protocol, plus built-in engines."""
