"""What several test files share: fake servers, fixtures, builders of example data
(tests/conftest.py puts tests/ on the import path: ``from helpers.x import y``)."""
