"""The fixtures research/tests shares with tests/, re-exported from tests/conftest.py rather
than copied. Only these fixtures are taken over: tests/conftest.py's set-up (no hub look-ups,
torch's thread count) runs once, on its import, and its collect_ignore (the weasel projects'
tests in the core suite) stays about tests/. A session fixture is made once per folder."""

from tests.conftest import bert_dir, canine_dir, shared_data, wnut17_dir

__all__ = ["bert_dir", "canine_dir", "shared_data", "wnut17_dir"]
