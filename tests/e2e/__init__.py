"""End-to-end tests: real agent runtimes driven by a scripted model (see conftest.py)."""
