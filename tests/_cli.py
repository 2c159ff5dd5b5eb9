"""`python -m spacy_entangle ARGS` run in-process with typer's CliRunner: the real command
(parsing, exit codes, stdout and stderr apart) without a subprocess' ~3 s of imports.
tests/backbone_dirs/test_builders.py::test_cli_subprocess keeps one real `python -m` run."""

from dataclasses import dataclass

from typer.testing import CliRunner

from spacy_entangle.cli import app


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """stdout then stderr, for messages that may go to either."""
        return self.stdout + self.stderr


def cli(*args: object) -> CliResult:
    """Exit code and output of the command; an exception other than an exit is re-raised
    (a crash must fail the test, not pass as exit code 1)."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return CliResult(result.exit_code, result.stdout, result.stderr)
