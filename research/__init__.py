"""The research tooling (README.md): one-off measurement scripts and their tests, not part of
the library. A package only so that pytest names research/tests' modules uniquely."""
