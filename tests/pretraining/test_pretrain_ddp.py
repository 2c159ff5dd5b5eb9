"""`pretrain-chars` data-parallel under torchrun (CPU, gloo, 2 processes): the command grows a
char encoder with rank 0 alone writing OUT; 2 processes compute the update 1 process
computes at the same global batch; a resumed 2-process run continues exactly; a run resumes
with another number of processes. Real torchrun launches on the tiny test backbones: two
launches in all (each costs two processes' imports), the rest in-process."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict

import pytest
import torch
from transformers import AutoModel

from spacy_entangle.backbone_dirs import sample_lines
from spacy_entangle.pretraining import PretrainSettings, pretrain_chars
from spacy_entangle.pretraining.checkpoint import CHECKPOINT, LOG_NAME

DRIVER = Path(__file__).with_name("_ddp_runs.py")
# what float rounding leaves between 2 processes and 1 (padding to other lengths, sums in
# another order): measured ~2e-6 after 6 steps; two steps move the weights by ~1e-3
RTOL, ATOL = 1e-4, 2e-5


def grow(teacher: Path, **kw: Any) -> Dict[str, Any]:
    """Settings of a grown run (the CLI run passes them as flags): 2 steps of stage A, then
    stage B, 6 planned (the same schedule whatever --max-steps, so a run can stop early and
    be resumed)."""
    base = dict(
        max_steps=6,
        decay_steps=6,
        stage_a_steps=2,
        batch_size=8,
        type_batch=32,
        lr=3e-3,
        warmup_steps=0,
        log_every=1,
        checkpoint_every=100,
        noise_rate=0.3,
        init_from=str(teacher),
        char_width=32,
    )
    base.update(kw)
    return base


def torchrun(*args: object) -> subprocess.CompletedProcess:
    """`torchrun --standalone --nproc_per_node 2 ARGS`: --standalone takes a free port, so
    parallel test runs do not collide."""
    launcher = Path(sys.executable).with_name("torchrun")
    command = [str(launcher)] if launcher.exists() else [sys.executable, "-m", "torch.distributed.run"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(
        [*command, "--standalone", "--nproc_per_node", "2", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def weights(path: Path) -> Dict[str, torch.Tensor]:
    return AutoModel.from_pretrained(path).state_dict()


def close(a: Dict[str, torch.Tensor], b: Dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.allclose(a[k], b[k], rtol=RTOL, atol=ATOL) for k in a)


def largest_change(a: Dict[str, torch.Tensor], b: Dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a if a[k].is_floating_point())


def log(path: Path):
    return [json.loads(line) for line in (path / LOG_NAME).read_text(encoding="utf8").splitlines()]


def masked(teacher: Path) -> Dict[str, Any]:
    """A CANINE's masked spans, noisy words and distillation of ``teacher``, 4 steps."""
    return dict(max_steps=4, batch_size=8, lr=3e-3, warmup_steps=0, log_every=1, noise_rate=0.3, teacher=str(teacher))


def run(text: Path, out: Path, settings: Dict[str, Any], resume: bool = False, config: str = "canine-small") -> None:
    pretrain_chars([text], out, PretrainSettings(**settings), config=config, resume=resume, progress=False)


def without_dropout(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    config = json.loads((dest / "config.json").read_text(encoding="utf8"))
    config.update({key: 0.0 for key in config if key.endswith("dropout_prob")})
    (dest / "config.json").write_text(json.dumps(config), encoding="utf8")
    return dest


@pytest.fixture(scope="module")
def data(tmp_path_factory, bert_dir, canine_dir):
    """The sample text; its first 9 lines (with no dev split, an epoch is a batch of 8 and
    a batch of 1, shorter than the processes: one of them stands in at weight 0); and copies
    of the tiny BERT and CANINE without dropout, the one thing each process draws for itself."""
    root = tmp_path_factory.mktemp("ddp")
    lines = sample_lines()
    full, short = root / "sample.txt", root / "nine.txt"
    full.write_text("\n".join(lines) + "\n", encoding="utf8")
    short.write_text("\n".join(lines[:9]) + "\n", encoding="utf8")
    still = without_dropout(bert_dir, root / "bert-no-dropout")
    canine = without_dropout(canine_dir, root / "canine-no-dropout")
    return SimpleNamespace(root=root, full=full, short=short, bert=bert_dir, still=still, canine=canine)


@pytest.fixture(scope="module")
def cli_run(data):
    """`torchrun --nproc_per_node 2 -m spacy_entangle pretrain-chars`, dropout on, 6 steps."""
    out = data.root / "cli"
    flags = grow(data.bert)
    options = [f"--{name.replace('_', '-')}" for name in flags]
    args = [arg for name, value in zip(options, flags.values()) for arg in (name, value)]
    result = torchrun("-m", "spacy_entangle", "pretrain-chars", data.full, out, *args)
    return SimpleNamespace(result=result, out=out)


@pytest.fixture(scope="module")
def single(data):
    """One process, no dropout, on the nine lines: 4 steps, and the same run resumed to 6;
    and the masked objectives on the sample text."""
    still = grow(data.still, dev_fraction=0.0)
    four, six = data.root / "one-4", data.root / "one-6"
    run(data.short, four, {**still, "max_steps": 4})
    shutil.copytree(four, six)
    shutil.copytree(four, data.root / "one-then-two")
    run(data.short, six, still, resume=True)
    run(data.full, data.root / "one-masked", masked(data.still), config=str(data.canine))
    return SimpleNamespace(four=weights(four), six=weights(six), masked=weights(data.root / "one-masked"))


@pytest.fixture(scope="module")
def driven(data, single):
    """One launch of two processes: a dropout run stopped at step 3 and resumed to 6 (the
    CLI run's plan), and, without dropout on the nine lines, 4 steps from scratch and the
    single process's step-4 checkpoint resumed to 6; and the masked objectives."""
    still = grow(data.still, dev_fraction=0.0)
    runs = [
        dict(texts=[data.full], out=data.root / "split", settings=grow(data.bert, max_steps=3), resume=False),
        dict(texts=[data.full], out=data.root / "split", settings=grow(data.bert), resume=True),
        dict(texts=[data.short], out=data.root / "two-4", settings={**still, "max_steps": 4}, resume=False),
        dict(texts=[data.short], out=data.root / "one-then-two", settings=still, resume=True),
        dict(
            texts=[data.full],
            out=data.root / "two-masked",
            settings=masked(data.still),
            config=data.canine,
            resume=False,
        ),
    ]
    spec = data.root / "runs.json"
    spec.write_text(json.dumps(runs, default=str), encoding="utf8")
    result = torchrun(DRIVER, spec)
    assert result.returncode == 0, result.stderr[-3000:]
    return data.root


@pytest.mark.slow
def test_torchrun_grows_a_char_encoder(cli_run, data):
    result, out = cli_run.result, cli_run.out
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("✔ Wrote") == 1  # rank 0 reports
    grown = AutoModel.from_pretrained(out)
    assert grown.config.model_type == "entangle-grown"
    assert grown.config.spacy_entangle_pretraining["steps"] == 6
    assert (out / "README.md").is_file()
    entries = log(out)
    assert [e["step"] for e in entries] == [1, 2, 3, 4, 5, 6]  # one writer
    assert all("type_loss" in e for e in entries[:2]) and all("last_loss" in e for e in entries[2:])
    assert "dev_clean_last_cos" in entries[-1]  # rank 0 evaluates
    teacher = AutoModel.from_pretrained(data.bert).state_dict()
    assert all(torch.equal(v, teacher[k]) for k, v in grown.words.state_dict().items() if k.startswith("encoder."))
    saved = torch.load(out / CHECKPOINT / "training_state.pt", weights_only=True)
    (cpu0, _), (cpu1, _) = saved["rank_rngs"]  # each process's own dropout stream
    assert torch.equal(cpu0, saved["torch_rng"]) and not torch.equal(cpu0, cpu1)


@pytest.mark.slow
def test_two_processes_compute_the_update_of_one(driven, single):
    """Same global batch of 8 (4 rows each, and a batch of 1 where one process stands in):
    the same weights after stage A and two steps of stage B, within float rounding, which
    is far below what a step changes."""
    two = weights(driven / "two-4")
    assert close(two, single.four)
    assert largest_change(single.four, single.six) > 100 * largest_change(two, single.four)
    one_log, two_log = log(driven / "one-4"), log(driven / "two-4")
    for key in ("type_loss", "last_loss", "mid_loss"):
        assert [e.get(key) for e in two_log] == pytest.approx([e.get(key) for e in one_log], abs=1e-3)


@pytest.mark.slow
def test_masked_objectives_in_two_processes_as_in_one(driven, single):
    """Masked spans, noisy words and distillation: each objective's loss weighted by the
    process's share of its scored characters or words."""
    assert close(weights(driven / "two-masked"), single.masked)
    one_log, two_log = log(driven / "one-masked"), log(driven / "two-masked")
    for key in ("mlm_loss", "noisy_loss", "distill_loss"):
        assert [e[key] for e in two_log] == pytest.approx([e[key] for e in one_log], abs=1e-3)


@pytest.mark.slow
def test_two_process_resume_continues_exactly(cli_run, driven):
    """Stopped at step 3 and resumed by two processes: the weights and the loss curve of
    the uninterrupted two-process run, bit for bit (dropout included: each rank's stream
    is in the checkpoint)."""
    assert cli_run.result.returncode == 0
    uninterrupted, resumed = weights(cli_run.out), weights(driven / "split")
    assert all(torch.equal(uninterrupted[k], resumed[k]) for k in uninterrupted)
    for key in ("type_loss", "last_loss", "mid_loss"):
        assert [e.get(key) for e in log(driven / "split")] == [e.get(key) for e in log(cli_run.out)]


@pytest.mark.slow
def test_resume_with_another_number_of_processes(driven, single, data):
    """A checkpoint of one process resumed by two, and one of two resumed by one: the
    weights of the uninterrupted single-process run."""
    assert close(weights(driven / "one-then-two"), single.six)
    two_then_one = data.root / "two-then-one"
    shutil.copytree(driven / "two-4", two_then_one)
    run(data.short, two_then_one, grow(data.still, dev_fraction=0.0), resume=True)
    assert close(weights(two_then_one), single.six)
    assert [e["step"] for e in log(two_then_one)] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize(
    "settings,message",
    [
        (dict(batch_size=7), "--batch-size 7 is the global batch, shared by the 2 processes: give a multiple of 2"),
        (dict(type_batch=33), "--type-batch 33 is the global batch"),
    ],
)
def test_a_global_batch_that_does_not_divide_is_refused(settings, message, data, tmp_path, monkeypatch):
    """Refused before any process group is joined (no process waits for another)."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(ValueError, match=message):
        run(data.short, tmp_path / "out", grow(data.still, **settings))
    assert not (tmp_path / "out").exists()
