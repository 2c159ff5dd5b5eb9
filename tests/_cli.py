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


def script(path: object, *args: object, cwd: object = None) -> CliResult:
    """`python PATH ARGS` (a project or research script) run in this process as ``__main__``
    (runpy), from ``cwd``: the real script, its exit code and its stdout and stderr apart,
    without a subprocess' seconds of imports; an exception other than an exit is re-raised,
    as in ``cli``."""
    import contextlib
    import io
    import os
    import runpy
    import sys

    out, err = io.StringIO(), io.StringIO()
    argv, here = sys.argv, os.getcwd()
    sys.argv = [str(path), *map(str, args)]
    code = 0
    try:
        if cwd is not None:
            os.chdir(str(cwd))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                runpy.run_path(str(path), run_name="__main__")
            except SystemExit as exit:
                if isinstance(exit.code, str):  # sys.exit("message"): printed, exit code 1
                    err.write(exit.code + "\n")
                code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
    finally:
        sys.argv = argv
        os.chdir(here)
    return CliResult(code, out.getvalue(), err.getvalue())
