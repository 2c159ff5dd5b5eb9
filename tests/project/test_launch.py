"""project/scripts/launch.py, which `pretrain-grown` runs through: with `grow_procs` 1 the
command as it always was, with N the same command under torchrun."""

import subprocess
import sys
from pathlib import Path

import pytest
import srsly
from launch import launch_command  # project/scripts/launch.py (setup.cfg: pytest pythonpath)

PROJECT = Path(__file__).resolve().parents[2] / "project"
GROW = "python -m spacy_entangle pretrain-chars tweets.txt backbones/grown --init-from backbones/minilm".split()


def test_one_process_runs_the_command_as_it_is():
    assert launch_command(1, GROW) == [sys.executable, *GROW[1:]]


def test_several_processes_run_it_under_torchrun():
    assert launch_command(4, GROW) == [
        sys.executable,
        *"-m torch.distributed.run --standalone --nproc_per_node 4".split(),
        *GROW[1:],
    ]
    for bad, message in ((["pretrain.sh", "x"], "python -m MODULE"), (["python", "train.py"], "python -m MODULE")):
        with pytest.raises(ValueError, match=message):
            launch_command(2, bad)
    with pytest.raises(ValueError, match="1 or more"):
        launch_command(0, GROW)


def test_the_script_passes_the_exit_code_on(tmp_path):
    script = PROJECT / "scripts" / "launch.py"
    run = subprocess.run(
        [sys.executable, script, "1", "--", "python", "-c", "import sys; print('ran'); sys.exit(3)"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 3 and run.stdout.strip() == "ran"


def test_pretrain_grown_runs_through_grow_procs():
    """The default (1) runs the one-process command."""
    cfg = srsly.read_yaml(PROJECT / "project.yml")
    line = next(c for c in cfg["commands"] if c["name"] == "pretrain-grown")["script"][0]
    assert cfg["vars"]["grow_procs"] == 1
    assert line.startswith("python scripts/launch.py ${vars.grow_procs} -- python -m spacy_entangle pretrain-chars ")
    assert (PROJECT / "scripts" / "launch.py").is_file()
