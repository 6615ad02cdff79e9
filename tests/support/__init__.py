"""Helpers shared by the tests: hand-built grammars and the brute-force oracle of the core."""
