"""The weasel project in project/ (WNUT-17 NER), driven for real through `python -m weasel run`.

Fast: project.yml validity, asset checksums against the local copy, the offline `data`
command, the dry run of `all`, variants.yml and scripts/variants.py in-process (commands,
resume, the table over seeds), and the helper scripts (if_exists, timed).
Slow (marked `slow`): test_wnut_project_end_to_end, ONE tiny project run shared by every
assert that needs one: backbones -> corpus -> train -> package on tiny backbones and a few
WNUT-17 sentences, the wheel installed into a temporary folder and loaded with spacy.load in a
fresh process, then train-baseline, noisy-dev, evaluate-noisy and compare.
Each copies project/ and configs/ to a temporary folder: the checkout is never written.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import srsly
from _weasel import offline_env, weasel
from spacy.cli._util import app as spacy_app
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "project"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
WNUT = SHARED / "wnut17"
TWEETS = SHARED / "tweets_unlabeled"

needs_wnut = pytest.mark.skipif(not (WNUT / "train.conll").exists(), reason="no ../shared/data/wnut17")

# tiny backbones and budget for the end-to-end runs
TINY_VARS = {
    "subword_backbone": "bert",
    "subword_dir": "backbones/tiny-bert",
    "char_random_dir": "backbones/tiny-canine",
    "pretrain_steps": 2,
    "grown_k": 1,
    "grown_steps": 3,
    "grown_stage_a": 1,
    "char_layers": 1,
    "char_width": 32,
    "char_heads": 2,
    "max_steps": 4,
    "baseline_max_steps": 4,
    "ship_steps": 4,
    "eval_frequency": 2,
    "package_version": "0.0.1",
    "plugin_src": str(ROOT),  # the project runs from a copy: build the plugin from the checkout
}
TINY_ENV = {
    "ENTANGLE_SUBWORD_BACKBONE_ARGS": "--layers 1 --width 32 --heads 2",
    "ENTANGLE_TRAIN_ARGS": (
        "--components.entangle.model.hidden_width 32 --components.entangle.model.n_heads 2 "
        "--components.entangle.model.ffn_width 64 --nlp.batch_size 16 "
        "--training.logger.progress_bar false"
    ),
}


def _copy_project(dest: Path) -> Path:
    """project/ and configs/ side by side (project.yml reads ../configs), without outputs."""
    ignore = shutil.ignore_patterns(
        "assets", "backbones", "corpus", "noisy", "training", "metrics", "packages", "project.lock", "__pycache__"
    )
    shutil.copytree(PROJECT, dest / "project", ignore=ignore)
    shutil.copytree(ROOT / "configs", dest / "configs")
    return dest / "project"


def _subset(src: Path, dest: Path, n: int, skip: int = 0) -> None:
    """The first n sentences (after skipping some) of a WNUT-17 file, lines verbatim."""
    blocks = [b for b in src.read_text(encoding="utf8").replace("\n\t\n", "\n\n").split("\n\n") if b.strip()]
    dest.write_text("\n\n".join(blocks[skip : skip + n]) + "\n\n", encoding="utf8")


def _tiny_data(folder: Path) -> Path:
    folder.mkdir(parents=True)
    _subset(WNUT / "train.conll", folder / "train.conll", 48)
    _subset(WNUT / "dev.conll", folder / "dev.conll", 16)
    return folder


def _tiny_tweets(folder: Path) -> Path:
    """The first 64 unlabeled tweets (for a 2-step `pretrain-chars`)."""
    folder.mkdir(parents=True)
    lines = (TWEETS / "tweets.txt").read_text(encoding="utf8").splitlines()[:64]
    (folder / "tweets.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    return folder


def _variants(*argv):
    """scripts/variants.py in-process (typer's test runner): its exit code and output."""
    from typer.testing import CliRunner
    from variants import app, split_extra

    args, extra = split_extra([str(a) for a in argv])
    return CliRunner().invoke(app, args, obj=extra)


# ---------------------------------------------------------------------------- fast


def test_project_yml_is_valid():
    from weasel.util import load_project_config

    cfg = load_project_config(PROJECT, overrides={"vars.wnut17_dir": "../../shared/data/wnut17"})
    commands = {c["name"]: c for c in cfg["commands"]}
    assert cfg["workflows"]["all"] == ["data", "backbones", "pretrain-grown", "corpus", "train", "package", "install"]
    assert cfg["workflows"]["baseline"][-2:] == ["train-baseline", "compare"]
    # each model at its own budget, read off its learning curve; en_entangle_wnut's `train` at
    # one that fits `make wnut`'s 90 minutes, at most its recipe's
    assert f"--max-steps {cfg['vars']['baseline_max_steps']} " in commands["train-baseline"]["script"][0]
    assert cfg["vars"]["ship_steps"] <= cfg["vars"]["budget_steps"]
    # spaCy keeps as model-best only what it evaluated: the budget's last step is an evaluation
    # (with evaluations every 200 steps, a 700-step run ships its step-600 weights)
    assert cfg["vars"]["ship_steps"] % cfg["vars"]["eval_frequency"] == 0
    assert f"--max-steps {cfg['vars']['ship_steps']} " in commands["train"]["script"][0]
    ship = cfg["vars"]["ship_variant"]
    # the learning curve: the shipped recipe by default, one run, dev at noise 0.5 beside dev,
    # its file where `scripts/curves.py collect` looks for it
    curve = commands["curve"]["script"][0]
    assert (
        f"train-one {cfg['vars']['curve_variant']} --resume no --seed 0 " in curve
        and cfg["vars"]["curve_variant"] == ship
    )
    assert "--curve metrics/curves/${vars.curve_variant}_seed0.jsonl" not in curve  # resolved by weasel
    assert f"--curve metrics/curves/{ship}_seed0.jsonl" in curve
    assert "--extra-dev dev_noise0.5=noisy/dev_noise0.5.spacy" in curve
    # each model's seeds at its own budget: by default the shipped recipe at the shipped budget
    budget = commands["budget"]["script"][0]
    steps = cfg["vars"]["budget_steps"]
    assert cfg["vars"]["budget_variant"] == ship
    assert f"train-one {ship} --resume no --seed {{seed}} " in budget and f"--patience {steps} " in budget
    assert f"--curve metrics/budget/{ship}_{steps}_seed{{seed}}.jsonl" in budget
    # `select` puts the recipe's seeds at that budget against the earlier rounds and the baseline's
    select = commands["select"]["script"][0]
    assert f"select {ship}@{steps} --prior meta/selection.json " in select
    assert f"--reference baseline@{cfg['vars']['baseline_max_steps']} " in select
    for name, steps in cfg["workflows"].items():
        assert set(steps) <= set(commands), name
    for name, cmd in commands.items():
        # a command without outputs re-runs every time: only those that skip their own done work
        assert cmd.get("outputs") or cmd.get("no_skip"), f"{name} has no outputs: it would never be skipped"
        assert cmd.get("help")
        # confection merges adjacent list items that are bare variables into "a, b"
        assert not [p for p in cmd.get("deps", []) + cmd.get("outputs", []) if ", " in p], name
    assert cfg["vars"]["package_name"] == "entangle_wnut"  # spacy package adds "en_"
    assert "random" in commands["backbones"]["help"].lower()
    assert commands["corpus"]["deps"] == ["../../shared/data/wnut17/"]
    train = commands["train"]["script"][0]
    ship = cfg["vars"]["ship_variant"]
    for part in [
        f"scripts/variants.py train {ship} --seeds 0",
        f"--max-steps {cfg['vars']['ship_steps']}",
        "--eval-frequency 200",
        "--gpu-id -1",
        "--char-encoder grown --char-dir backbones/grown",
        "--force",
    ]:
        assert part in train, part
    # the model's wheel at the top of packages/ (spacy package builds it in a dist/ folder), so
    # `install` installs it by name, as the README tells users
    wheel = commands["install"]["deps"][0]
    assert wheel == "packages/en_entangle_wnut-0.1.0-py3-none-any.whl" == commands["package"]["outputs"][0]
    assert "pip install --find-links packages en_entangle_wnut==0.1.0" in commands["install"]["script"]
    # every dependency is a file the project makes, a config, or the data folder
    made = {o for c in commands.values() for o in c.get("outputs", [])}
    for name, cmd in commands.items():
        for dep in cmd.get("deps", []):
            if dep.startswith("../configs/"):
                assert (PROJECT / dep).exists(), dep
            elif dep.startswith("meta/"):
                assert (PROJECT / dep).exists(), dep
            elif dep not in ("corpus", "../../shared/data/wnut17/", "variants.yml"):
                assert dep in made, f"{name}: {dep} is made by no command"
    assert (PROJECT / "meta" / "entangle_wnut.json").exists()
    # the entangle models train on the grown char encoder; masked starts from the random one
    assert "backbones/grown/" in commands["train"]["deps"]
    assert "--config backbones/canine-random" in commands["pretrain-chars"]["script"][0]
    # the shipped char encoder is a variable; `all` makes the default one
    assert cfg["vars"]["char_encoder"] == "grown" and cfg["vars"]["char_dir"] == "backbones/grown"
    assert "backbones/grown/" in commands["pretrain-grown"]["outputs"]
    assert "backbones/canine-masked/" in commands["pretrain-chars"]["outputs"]
    distill = commands["pretrain-distill"]["script"][0]
    for part in [
        "backbones/canine-distilled --config backbones/canine-random",
        "--max-steps 1600",
        "--teacher backbones/minilm",
        "--teacher-layers -1",
    ]:
        assert part in distill, part
    assert "--max-steps 2400" in commands["pretrain-chars"]["script"][0]
    assert {"pretrain-chars", "pretrain-distill", "pretrain-grown", "noisy-dev", "train-pretraining"} <= set(
        cfg["workflows"]["pretraining"]
    )
    assert cfg["workflows"]["pretraining"][-2:] == ["compare", "select"]
    # design (a) of the grown encoder, piloted beside grown (design (b))
    assert "pretrain-grown-canine" in cfg["workflows"]["pretraining"]
    assert "--init-from backbones/minilm --design canine --k 6" in commands["pretrain-grown-canine"]["script"][0]
    pretraining = commands["train-pretraining"]["script"][0]
    for name in [
        "entangle-random",
        "entangle-char-masked",
        "entangle-distilled",
        "entangle-char-distilled",
        "entangle-grown",
        "entangle-char-grown",
        "entangle-both-grown",
        "entangle-char-grown-canine",
        "baseline",
    ]:
        assert f" {name} " in pretraining, name
    assert "--seeds 0,1,2" in pretraining and "--noisy noisy/dev_noise0.5.spacy" in pretraining
    scores, default, evaluate, package = commands["package"]["script"][:4]
    assert f"add-scores training/{ship}/seed0/model-best training/{ship}/seed0/model-scored --beam-width 4" in scores
    # it ships the fast inference default, its ONNX graphs exported once at package time
    assert f"scripts/fast_default.py training/{ship}/seed0/model-scored" in default
    # the meta's performance is the shipped (beam-decoded) pipeline's dev score, in that default
    assert f"evaluate training/{ship}/seed0/model-scored corpus/dev.spacy" in evaluate
    assert f"--metrics metrics/{ship}/seed0_dev_scored.json" in package
    assert f"--packaged training/{ship}/seed0/model-scored" in package
    assert f"--char-encoder backbones/grown --variant {ship} --selection meta/selection.json" in package
    assert f"training/{ship}/seed0/model-best" in commands["package"]["deps"]
    distilled = load_project_config(
        PROJECT, overrides={"vars.char_encoder": "distilled", "vars.char_dir": "backbones/canine-distilled"}
    )
    train_distilled = {c["name"]: c for c in distilled["commands"]}["train"]
    assert "--char-encoder distilled --char-dir backbones/canine-distilled" in train_distilled["script"][0]
    assert "backbones/canine-distilled/" in train_distilled["deps"]
    for script in [
        "variants.py",
        "variants_run.py",
        "variants_report.py",
        "_variants.py",
        "tables.py",
        "timed.py",
        "if_exists.py",
        "data.py",
        "package_meta.py",
        "check_package.py",
        "copy_wheel.py",
        "plot_pretrain.py",
    ]:
        assert (PROJECT / "scripts" / script).exists()


def test_every_variant_trains_with_its_settings(monkeypatch):
    """variants.yml is the one list of variants: each resolves to a `spacy train` command
    with its config, char encoder, side and augmenter (a variant without `augment` turns the
    config's own off), and the baseline gets no entangle overrides."""
    from _variants import load_variants
    from variants_run import train_command

    monkeypatch.chdir(PROJECT)  # --configs-dir ../configs: the augmenter is read from the config

    table = load_variants()
    assert {
        "entangle",
        "entangle-char",
        "entangle-masked",
        "entangle-distilled",
        "entangle-random",
        "entangle-char-distilled",
        "baseline",
        "baseline-aug",
        "paper",
        "paper-baseline",
    } <= set(table)

    def command(name, **kw):
        settings = dict(
            output=Path("training") / name / "seed1",
            corpus_dir=Path("corpus"),
            configs_dir=Path("../configs"),
            backbones_dir=Path("backbones"),
            subword_dir=Path("backbones/minilm"),
            char_encoder="masked",
            max_steps=600,
            eval_frequency=200,
            n_coattention=1,
            gpu_id=-1,
            aug_level=0.4,
            aug_rate=0.25,
            extra=["--nlp.batch_size", "16"],
        )
        settings.update(kw)
        return " ".join(train_command(table[name], 1, **settings)[1:])

    entangle = command("entangle")
    for part in [
        "train ../configs/ner_cpu.cfg --output training/entangle/seed1",
        "--system.seed 1",
        "--training.max_steps 600 --training.optimizer.learn_rate.total_steps 600",
        "--paths.char_backbone backbones/canine-masked",
        "--components.entangle.model.n_coattention 1",
        "--components.ner.model.tok2vec.side subword",
        "--nlp.batch_size 16",
    ]:
        assert part in entangle, part
    assert "--paths.char_backbone backbones/canine-distilled" in command("entangle", char_encoder="distilled")
    assert "--paths.char_backbone backbones/canine-random" in command("entangle-char-random", char_encoder="distilled")
    assert "--components.ner.model.tok2vec.side char" in command("entangle-char-distilled")
    # the grown char encoder (pretrain-grown) lives in backbones/grown, not canine-*
    grown = command("entangle-char-grown")
    assert "--paths.char_backbone backbones/grown " in grown + " " and "tok2vec.side char" in grown
    assert "--paths.char_backbone backbones/grown" in command("entangle", char_encoder="grown")
    baseline = command("baseline")
    assert "../configs/baseline_ner_cpu.cfg" in baseline
    assert "char_backbone" not in baseline and "entangle" not in baseline.replace("training/baseline", "")
    augmenter = '{"@augmenters": "spacy-entangle.char_noise_augmenter.v1", "level": 0.4, "rate": 0.25}'
    assert augmenter in command("entangle-aug") and augmenter in command("baseline-aug")
    assert augmenter not in entangle
    # configs/ner_cpu.cfg (the shipped recipe) has the augmenter: the others turn it off, and
    # a config without one gets no override
    off = "--corpora.train.augmenter null"
    assert off in entangle and off in command("entangle-both") and off in command("entangle-both-lr")
    assert off not in command("entangle-aug") and "augmenter" not in baseline
    assert "augmenter" not in command("entangle-spancat")
    spancat = command("entangle-spancat")
    assert "../configs/spancat_cpu.cfg" in spancat and "--components.spancat.model.tok2vec.side subword" in spancat
    assert "components.ner" not in spancat
    # a variant's own settings (the decisive-win levers), before the command line's
    lr = command("entangle-aug-lr")
    assert "--components.entangle.model.backbone_lr_scale 0.667" in lr and augmenter in lr
    assert "backbone_lr_scale" not in command("entangle-aug")
    assert lr.index("backbone_lr_scale") < lr.index("--nlp.batch_size 16")
    paper = command("paper", max_steps=None, eval_frequency=None)
    assert "--paths.char_backbone google/canine-s" in paper and "--paths.subword_backbone roberta-base" in paper
    assert "max_steps" not in paper  # the paper config's own budget


def test_variants_file_errors_name_the_variant(tmp_path):
    from _variants import load_variants
    from variants_run import parse_seeds

    bad = tmp_path / "variants.yml"
    for text, message in [
        ("variants:\n  x:\n    char_encoder: masked\n", "variant 'x' names no config"),
        ("variants:\n  x:\n    config: a.cfg\n    side: left\n", "variant 'x': side must be"),
        ("variants:\n  x:\n    config: a.cfg\n    char_encoder: great\n", "variant 'x': char_encoder"),
        ("variants:\n  x:\n    config: a.cfg\n    seeds: 3\n", "variant 'x': unknown keys ['seeds']"),
        ("variants:\n  x:\n    config: a.cfg\n    settings: 3\n", "variant 'x': settings must be a mapping"),
    ]:
        bad.write_text(text)
        with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
            load_variants(bad)
    r = _variants("train", "nope", "--variants", PROJECT / "variants.yml", "--dry-run")
    assert r.exit_code == 1 and "no variant ['nope']" in r.output
    with pytest.raises(SystemExit, match="--seeds takes integers"):
        parse_seeds("0,one")
    # a command line typer rejects: its message and exit code 2, not a traceback
    r = _variants("train", "--seeds", "0")
    assert r.exit_code == 2 and "Missing argument" in r.output
    r = _variants("train", "entangle", "--char-encoder", "great")
    assert r.exit_code == 2 and "great" in r.output


def test_pipelines_lists_where_each_variant_trains(tmp_path):
    """`compare` hands the speed benchmark these paths (speed_compare.py --pipelines @FILE):
    only the project knows its folder layout."""
    out = tmp_path / "pipelines.txt"
    r = _variants("pipelines", "entangle", "baseline", "--seed", "2", "--training-dir", "tr", "--output", out)
    assert r.exit_code == 0, r.output
    assert out.read_text(encoding="utf8").splitlines() == [
        f"entangle={Path('tr/entangle/seed2/model-best')}",
        f"baseline={Path('tr/baseline/seed2/model-best')}",
    ]


@needs_wnut
def test_asset_checksums_match_local_copy():
    from weasel.util import get_checksum

    raw = srsly.read_yaml(PROJECT / "project.yml")
    by_name = {Path(a["dest"]).name: a for a in raw["assets"]}
    assert get_checksum(WNUT / "train.conll") == by_name["train.conll"]["checksum"]
    assert get_checksum(WNUT / "dev.conll") == by_name["dev.conll"]["checksum"]
    assert by_name["test.conll"].get("extra") is True
    assert get_checksum(TWEETS / "tweets.txt") == by_name["tweets.txt"]["checksum"]
    urls = [a["url"] for a in raw["assets"]]
    assert all(
        u.startswith(
            (
                "https://raw.githubusercontent.com/leondz/emerging_entities_17/",
                "https://raw.githubusercontent.com/cardiffnlp/tweeteval/",
            )
        )
        for u in urls
    )


@needs_wnut
def test_data_command_offline(tmp_path):
    project = _copy_project(tmp_path)
    v = {"wnut17_dir": str(WNUT), "tweets_dir": str(TWEETS)}
    _, out = weasel(project, "data", v)
    assert out.count("Skipping download with matching checksum") == 3
    _, out = weasel(project, "data", v)
    assert "Skipping 'data': nothing changed" in out
    assert not (project / "assets" / "wnut17" / "train.conll").exists()  # nothing copied


def test_data_command_names_the_fix(tmp_path):
    project = _copy_project(tmp_path)
    empty = tmp_path / "nowhere"
    empty.mkdir()
    # an empty folder whose files can't be downloaded (no network here, or a wrong checksum
    # elsewhere is impossible to reach): a clear hint, exit code 1
    rc, out = weasel(project, "data", {"wnut17_dir": str(empty)}, check=False)
    if rc == 0:  # there was network and the download worked: nothing more to check
        return
    assert "--vars.wnut17_dir" in out


@needs_wnut
def test_dry_run_of_all(tmp_path):
    project = _copy_project(tmp_path)
    _, out = weasel(project, "all", {"wnut17_dir": str(WNUT), "tweets_dir": str(TWEETS), "ship_steps": 7}, dry=True)
    ship = srsly.read_yaml(PROJECT / "project.yml")["vars"]["ship_variant"]
    for part in [
        "scripts/data.py",
        "init-backbone minilm backbones/minilm",
        "init-backbone canine backbones/canine-random --layers 2 --width 256",
        f"pretrain-chars {TWEETS}/tweets.txt backbones/grown --init-from backbones/minilm --k 6 --max-steps 1100",
        "scripts/plot_pretrain.py backbones/grown/pretrain_log.jsonl metrics/pretrain_grown.png",
        "-m spacy_entangle convert",
        f"scripts/variants.py train {ship} --seeds 0 --char-encoder grown --char-dir backbones/grown "
        "--subword-dir backbones/minilm --n-coattention 1 --max-steps 7",
        f"-m spacy_entangle add-scores training/{ship}/seed0/model-best training/{ship}/seed0/model-scored --beam-width 4",
        f"-m spacy package training/{ship}/seed0/model-scored packages --name entangle_wnut",
        "-m build --no-isolation --outdir packages ..",
        "pip uninstall -y -q en_entangle_wnut",
        "scripts/copy_wheel.py packages/en_entangle_wnut-0.1.0/dist/en_entangle_wnut-0.1.0-py3-none-any.whl packages",
        "pip install --find-links packages en_entangle_wnut==0.1.0",
        "scripts/check_package.py en_entangle_wnut",
    ]:
        assert part in out, part


def test_if_exists_and_timed(tmp_path):
    scripts = PROJECT / "scripts"
    stale = tmp_path / "stale.json"
    stale.write_text("{}")
    marker = tmp_path / "ran.txt"
    cmd = ["python", "-c", f"open({str(marker)!r}, 'w').write('x')"]
    r = subprocess.run(
        [sys.executable, scripts / "if_exists.py", tmp_path / "missing", "--else-remove", stale, "--", *cmd],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and "skipped" in r.stdout
    assert not stale.exists() and not marker.exists()
    r = subprocess.run([sys.executable, scripts / "if_exists.py", tmp_path, "--", *cmd], capture_output=True, text=True)
    assert r.returncode == 0 and marker.exists()
    r = subprocess.run(
        [sys.executable, scripts / "if_exists.py", tmp_path, "--", "python", "-c", "raise SystemExit(3)"]
    )
    assert r.returncode == 3
    # timed: JSON only on success, the command's exit code passed on
    out = tmp_path / "m" / "t.json"
    r = subprocess.run(
        [sys.executable, scripts / "timed.py", out, "--", "python", "-c", "print('hi')"], capture_output=True, text=True
    )
    assert r.returncode == 0 and "hi" in r.stdout
    record = json.loads(out.read_text())
    assert record["seconds"] >= 0 and record["command"][:2] == ["-c", "print('hi')"]
    r = subprocess.run(
        [sys.executable, scripts / "timed.py", out, "--", "python", "-c", "raise SystemExit(5)"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 5 and not out.exists()


def _scores(f, p, r, per_type):
    return {
        "token_acc": 1.0,
        "ents_p": p,
        "ents_r": r,
        "ents_f": f,
        "ents_per_type": {k: {"p": v, "r": v, "f": v} for k, v in per_type.items()},
        "speed": 1000.0,
    }


def test_compare_over_seeds(tmp_path):
    """variants.py compare: one row per variant with metrics, in variants.yml's order, mean ±
    sample spread over its seeds, clean and noisy, the drop relative to the baseline's."""
    m = tmp_path / "metrics"
    for name, seeds in {
        "entangle": [(0.50, 0.40), (0.54, 0.42)],
        "entangle-char": [(0.31, None)],
        "baseline": [(0.45, 0.25), (0.47, 0.27), (0.49, 0.29)],
    }.items():
        (m / name).mkdir(parents=True)
        for seed, (clean, noisy) in enumerate(seeds):
            p, r = (0.6, 0.43) if name == "entangle" else (0.35, 0.28) if name == "entangle-char" else (0.5, 0.4)
            srsly.write_json(m / name / f"seed{seed}_dev.json", _scores(clean, p, r, {"person": clean}))
            if noisy is not None:
                srsly.write_json(m / name / f"seed{seed}_dev_noise0.5.json", _scores(noisy, p, r, {}))
            if name == "entangle":
                srsly.write_json(m / name / f"seed{seed}_train_time.json", {"seconds": 754.2})
    srsly.write_json(
        m / "speed.json",
        {
            "pipelines": {
                "words": 15733,
                "device": "cpu",
                "batch_size": 64,
                "models": {"entangle": {"words_per_second": 812.4}, "baseline": {"words_per_second": 1624.8}},
            }
        },
    )
    r = _variants("compare", "--metrics-dir", m)
    assert r.exit_code == 0, r.output
    table = (m / "compare.md").read_text()
    lines = [line for line in table.splitlines() if line.startswith("|")]
    assert lines[0] == (
        "| model | seeds | dev F1 | P | R | F1 per seed | noisy F1 @0.5 | drop @0.5 | "
        "drop / baseline's | train time | words/s |"
    )
    assert lines[2] == (
        "| entangle | 2 | 52.0 ± 2.8 | 60.0 | 43.0 | 50.0 / 54.0 | 41.0 ± 1.4 | 11.0 ± 1.4 | 0.55 | 12m 34s | 812 |"
    )
    assert lines[3] == "| entangle-char | 1 | 31.0 | 35.0 | 28.0 | 31.0 | – | – | – | – | – |"
    assert lines[4] == (
        "| baseline | 3 | 47.0 ± 2.0 | 50.0 | 40.0 | 45.0 / 47.0 / 49.0 | 27.0 ± 2.0 | 20.0 ± 0.0 | 1.00 | – | 1,625 |"
    )
    assert len(lines) == 5
    png = (m / "compare.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    # nothing to compare: a clear error
    r = _variants("compare", "--metrics-dir", tmp_path / "none")
    assert r.exit_code == 1 and "no metrics" in r.output


def _seed_metrics(m: Path, name: str, pairs) -> None:
    (m / name).mkdir(parents=True)
    for seed, (clean, noisy) in enumerate(pairs):
        srsly.write_json(m / name / f"seed{seed}_dev.json", _scores(clean, 0.5, 0.5, {}))
        if noisy is not None:
            srsly.write_json(m / name / f"seed{seed}_dev_noise0.5.json", _scores(noisy, 0.5, 0.5, {}))


def test_select_ships_the_best_mean_of_clean_and_noisy(tmp_path):
    """`select`: the best mean over seeds of (clean + noise-0.5 dev F1) / 2, not the
    best clean F1; every candidate needs --min-seeds seeds with both figures."""
    m = tmp_path / "metrics"
    _seed_metrics(m, "entangle-grown", [(0.54, 0.35), (0.53, 0.34), (0.55, 0.36)])  # best clean: 44.5
    _seed_metrics(m, "entangle-char-grown", [(0.48, 0.42), (0.49, 0.41), (0.47, 0.43)])  # 45.0
    _seed_metrics(m, "entangle-both-grown", [(0.50, 0.30), (0.52, 0.32), (0.51, 0.31)])  # 41.0
    _seed_metrics(m, "baseline", [(0.54, 0.34), (0.53, 0.35), (0.55, 0.33)])
    out = tmp_path / "selection.json"
    names = ["entangle-grown", "entangle-char-grown", "entangle-both-grown"]
    r = _variants("select", *names, "--metrics-dir", m, "--output", out)
    assert r.exit_code == 0, r.output
    chosen = json.loads(out.read_text())
    assert (chosen["chosen"], chosen["side"], chosen["char_encoder"]) == ("entangle-char-grown", "char", "grown")
    row = chosen["candidates"][1]
    assert row["seeds"] == [0, 1, 2] and row["dev_f1"] == [0.48, 0.01] and row["score"] == 0.45
    assert row["dev_f1_noise0.5"] == [0.42, 0.01] and row["drop_noise0.5"] == [0.06, 0.02]
    assert chosen["reference"]["name"] == "baseline" and chosen["reference"]["dev_f1"][0] == 0.54
    assert "→ entangle-char-grown" in r.output
    # a candidate short of seeds (or of its noisy figures) is an error, not a silent pick
    (m / "entangle-both-grown" / "seed2_dev_noise0.5.json").unlink()
    r = _variants("select", *names, "--metrics-dir", m, "--output", out)
    assert r.exit_code == 1 and "entangle-both-grown has 2 seed" in r.output


def test_select_takes_the_earlier_rounds_from_prior(tmp_path):
    """`select --prior`: an earlier round's candidates (and baseline) compete with their
    recorded figures, marked as from that file with the --min-seeds their round admitted them
    under; a candidate with metrics in --metrics-dir is measured there instead; a `default`
    char encoder is the one the seeds were trained with (train_time.json)."""
    prior = tmp_path / "prior.json"
    rows = {
        "entangle-grown": (0.50, 0.40, [0, 2]),  # 45.0, two seeds: admitted by its round
        "entangle-both-grown": (0.55, 0.40, [0, 1, 2]),  # 47.5
    }
    srsly.write_json(
        prior,
        {
            "criterion": "best mean over seeds of (clean dev F1 + dev F1 at noise 0.5) / 2",
            "noise_rate": "0.5",
            "min_seeds": 2,
            "chosen": "entangle-both-grown",
            "side": "both",
            "char_encoder": "grown",
            "candidates": [
                {
                    "name": name,
                    "side": "both" if "both" in name else "subword",
                    "char_encoder": "grown",
                    "seeds": seeds,
                    "dev_f1": [clean, 0.01],
                    "dev_f1_noise0.5": [noisy, 0.01],
                    "drop_noise0.5": [clean - noisy, 0.01],
                    "score": (clean + noisy) / 2,
                }
                for name, (clean, noisy, seeds) in rows.items()
            ],
            "reference": {
                "name": "baseline",
                "side": "subword",
                "seeds": [0, 1, 2],
                "dev_f1": [0.53, 0.01],
                "dev_f1_noise0.5": [0.34, 0.01],
                "drop_noise0.5": [0.19, 0.01],
                "score": 0.435,
            },
        },
    )
    m = tmp_path / "metrics"
    _seed_metrics(m, "entangle-aug", [(0.54, 0.45), (0.53, 0.43), (0.52, 0.44)])  # 48.5
    for seed in range(3):
        command = ["-m", "spacy", "train", "ner_cpu.cfg", "--paths.char_backbone", "backbones/grown"]
        srsly.write_json(m / "entangle-aug" / f"seed{seed}_train_time.json", {"seconds": 1.0, "command": command})
    out = tmp_path / "selection.json"
    r = _variants("select", "entangle-aug", "--prior", prior, "--metrics-dir", m, "--output", out)
    assert r.exit_code == 0, r.output
    chosen = json.loads(out.read_text())
    assert [c["name"] for c in chosen["candidates"]] == ["entangle-grown", "entangle-both-grown", "entangle-aug"]
    assert (chosen["chosen"], chosen["side"], chosen["char_encoder"], chosen["augment"]) == (
        "entangle-aug",
        "both",
        "grown",
        True,
    )
    earlier, new = chosen["candidates"][0], chosen["candidates"][2]
    assert earlier["from"] == str(prior) and earlier["min_seeds"] == 2 and earlier["score"] == 0.45
    assert "from" not in new and new["augment"] and new["seeds"] == [0, 1, 2] and new["score"] == 0.485
    assert chosen["reference"]["from"] == str(prior) and chosen["reference"]["dev_f1"] == [0.53, 0.01]
    assert chosen["prior"] == str(prior) and chosen["min_seeds"] == 3
    assert "→ entangle-aug" in r.output and f"(2 seeds, from {prior})" in r.output
    # the committed file as the next round's prior: the earlier marks are kept, the new one gains them
    again = tmp_path / "again.json"
    r = _variants("select", "entangle-aug", "--prior", out, "--metrics-dir", tmp_path / "none", "--output", again)
    assert r.exit_code == 0, r.output
    rerun = json.loads(again.read_text())
    assert rerun["candidates"][0]["from"] == str(prior) and rerun["candidates"][2]["from"] == str(out)
    assert rerun["candidates"][2]["min_seeds"] == 3 and rerun["chosen"] == "entangle-aug"
    # a prior candidate measured in --metrics-dir: these figures, not the recorded ones
    _seed_metrics(m, "entangle-both-grown", [(0.60, 0.50), (0.60, 0.50), (0.60, 0.50)])
    r = _variants("select", "entangle-aug", "--prior", prior, "--metrics-dir", m, "--output", out)
    assert r.exit_code == 0, r.output
    remeasured = json.loads(out.read_text())
    assert remeasured["chosen"] == "entangle-both-grown" and "from" not in remeasured["candidates"][1]
    assert remeasured["candidates"][1]["score"] == 0.55
    # ... where it needs --min-seeds seeds like any other
    (m / "entangle-both-grown" / "seed2_dev.json").unlink()
    r = _variants("select", "entangle-aug", "--prior", prior, "--metrics-dir", m, "--output", out)
    assert r.exit_code == 1 and "entangle-both-grown has 2 seed" in r.output
    shutil.rmtree(m / "entangle-both-grown")
    # the char encoder its seeds were trained with, against --char-encoder
    r = _variants(
        "select", "entangle-aug", "--prior", prior, "--metrics-dir", m, "--char-encoder", "masked", "--output", out
    )
    assert r.exit_code == 1 and "['grown', 'masked']" in r.output
    # another noise rate's figures do not compete
    r = _variants("select", "entangle-aug", "--prior", prior, "--metrics-dir", m, "--noise", "0.25", "--output", out)
    assert r.exit_code == 1 and "scored noise 0.5, not --noise 0.25" in r.output


def test_committed_selection_is_what_the_project_ships(tmp_path):
    """meta/selection.json (the 3-seed choice) and project.yml's ship_variant / char_encoder /
    char_dir name the same model, so `all` packages the measured winner, and the package's
    description says which variant it is and why."""
    import _variants as variants
    from package_meta import variant_record

    selection = json.loads((PROJECT / "meta" / "selection.json").read_text(encoding="utf8"))
    project_vars = srsly.read_yaml(PROJECT / "project.yml")["vars"]
    table = variants.load_variants()
    # every candidate with the seeds its round's `select` asked for (recorded: the earlier
    # rounds' candidates come from --prior, with their own min_seeds), the shipped one with 3
    assert len(selection["candidates"]) >= 4 and selection["min_seeds"] >= 3
    assert all(len(c["seeds"]) >= c.get("min_seeds", selection["min_seeds"]) >= 2 for c in selection["candidates"])
    earlier = [c["name"] for c in selection["candidates"] if c.get("from")]
    assert earlier[:4] == ["entangle-grown", "entangle-char-grown", "entangle-both-grown", "entangle-aug"]
    assert {c["from"] for c in selection["candidates"] if c.get("from")} == {selection["prior"]}
    best = max(selection["candidates"], key=lambda c: c["score"])
    assert best["name"] == selection["chosen"] and len(best["seeds"]) >= 3 and "from" not in best
    # the shipped recipe's seeds at its own budget, the baseline's at its own beside them
    assert (
        best["steps"] == selection["steps"] == project_vars["budget_steps"] and best["budget"] == "meta/budget/wnut17"
    )
    assert selection["reference"]["name"] == "baseline" and len(selection["reference"]["seeds"]) == 3
    assert selection["reference"]["steps"] == project_vars["baseline_max_steps"]
    ship = table[project_vars["ship_variant"]]
    assert ship.char_encoder == variants.DEFAULT and ship.side == selection["side"]
    assert ship.augment == selection["augment"] == best["augment"]
    assert project_vars["char_encoder"] == selection["char_encoder"]
    assert project_vars["char_dir"] == f"backbones/{variants.ENCODER_DIRS[selection['char_encoder']]}"
    record, sentence = variant_record(project_vars["ship_variant"], Path(project_vars["char_dir"]), selection)
    assert record["chosen_by_selection"] and "It was chosen among" in sentence
    assert "trained with spacy-entangle's char-noise augmenter" in sentence
    # the model card says the augmenter the packaged pipeline trained with (its config.cfg)
    from package_meta import trained_augmenter

    shutil.copy(ROOT / "configs" / ship.config, tmp_path / "config.cfg")
    record, sentence = variant_record(ship.name, None, selection, trained_augmenter(tmp_path))
    level = project_vars["aug_level"] if ship.aug_level is None else ship.aug_level
    assert record["augmenter"]["level"] == level == best["augmenter"]["level"] and record["chosen_by_selection"]
    assert f"a share {level} of the training sentences" in sentence
    assert "char-noise augmenter" not in variant_record(ship.name, None, selection, (True, None))[1].split(".")[0]
    assert "(2 seeds, an earlier round)" in sentence and f"{ship.name} " in sentence
    # the project's `select` names the shipped variant and takes the earlier rounds from meta/
    commands = {c["name"]: c for c in srsly.read_yaml(PROJECT / "project.yml")["commands"]}
    select = commands["select"]["script"][0]
    assert f"select ${{vars.budget_variant}}@${{vars.budget_steps}} --prior {selection['prior']} " in select
    assert (project_vars["budget_variant"], project_vars["budget_steps"]) == (ship.name, selection["steps"])
    assert "--min-seeds 3" in select
    # another side, another char encoder, or the same side without the augmenter, is shipped
    # with a warning, not silently
    other = next(n for n in ("entangle", "entangle-char", "entangle-both") if table[n].side != selection["side"])
    assert "NOT the variant" in variant_record(other, None, selection)[1]
    both, sentence = variant_record("entangle-both", None, selection)
    assert (
        not both["chosen_by_selection"] and "NOT the variant" in sentence and "augmenter" not in sentence.split(".")[0]
    )
    assert not variant_record(ship.name, Path("backbones/canine-masked"), selection)[0]["chosen_by_selection"]


def test_variants_resume_and_retrain(tmp_path, monkeypatch):
    """A seed trained by the same command is skipped; another command (budget) retrains it and
    its old metrics go first; `evaluate` skips seeds that were never trained. (The training
    subprocess is replaced by one that records its command: the real run is the end-to-end
    test's.)"""
    import variants_run

    calls = []

    def fake_run(cmd):  # [python, timed.py, TIME.json, "--", python, -m, spacy, train, ...]
        calls.append(cmd)
        out = Path(cmd[cmd.index("--output") + 1])
        (out / "model-best").mkdir(parents=True, exist_ok=True)
        Path(cmd[2]).parent.mkdir(parents=True, exist_ok=True)
        Path(cmd[2]).write_text(json.dumps({"command": cmd[5:]}))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(variants_run.subprocess, "run", fake_run)
    monkeypatch.setattr(
        variants_run,
        "evaluate",
        lambda model, sets, outputs, gpu: [srsly.write_json(outputs[k], {"ents_f": 0.5}) for k in sets],
    )
    monkeypatch.chdir(tmp_path)
    args = ["train", "baseline", "--seeds", "0,1", "--max-steps", "5"]
    assert _variants(*args).exit_code == 0 and len(calls) == 2
    assert Path("metrics/baseline/seed1_dev.json").exists()
    assert _variants(*args).exit_code == 0 and len(calls) == 2  # done: nothing re-runs
    srsly.write_json(Path("metrics/baseline/seed1_dev_noise0.5.json"), {"ents_f": 0.1})
    assert _variants(*args[:-1], "6").exit_code == 0 and len(calls) == 4  # another budget: retrained
    assert not Path("metrics/baseline/seed1_dev_noise0.5.json").exists()  # its stale metrics gone
    assert _variants(*args[:-1], "6", "--force").exit_code == 0 and len(calls) == 6
    assert _variants("evaluate", "entangle", "--seeds", "0").exit_code == 0 and len(calls) == 6


# ---------------------------------------------------------------------------- slow


@pytest.mark.slow
@needs_wnut
def test_wnut_project_end_to_end(tmp_path, monkeypatch):
    """The main job on tiny backbones: data, backbones, corpus, train (+ its evaluation),
    package (weasel for real), then the wheel installed into a temporary folder and loaded by
    name in a fresh process; then the `baseline` workflow's train-baseline, the noisy dev
    copies and their evaluation, speed and compare: one tiny project run for every assert
    that needs one.
    Needs the `entangle` component and `init-backbone` (spacy_entangle)."""
    project = _copy_project(tmp_path)
    data = _tiny_data(tmp_path / "wnut17")
    v = dict(TINY_VARS, wnut17_dir=str(data), tweets_dir=str(_tiny_tweets(tmp_path / "tweets")))
    ship = srsly.read_yaml(project / "project.yml")["vars"]["ship_variant"]
    for command in ["backbones", "pretrain-grown", "corpus", "train", "package"]:
        _, out = weasel(project, command, v, env=TINY_ENV)
        if command == "corpus":
            assert "48 docs" in out and "16 docs" in out and "skipped (no" in out  # no test.conll
    assert (project / "backbones" / "tiny-bert").is_dir() and (project / "backbones" / "tiny-canine").is_dir()
    # the grown char encoder: the tiny BERT's one layer under a trained front end
    grown = json.loads((project / "backbones" / "grown" / "config.json").read_text())
    assert grown["model_type"] == "entangle-grown" and grown["hidden_size"] == 32
    assert grown["spacy_entangle_note"].startswith("pretrained by")
    assert (project / "metrics" / "pretrain_grown.png").read_bytes()[:4] == b"\x89PNG"
    metrics = json.loads((project / "metrics" / ship / "seed0_dev.json").read_text())
    assert {"ents_p", "ents_r", "ents_f", "ents_per_type"} <= set(metrics)
    assert not (project / "metrics" / ship / "seed0_test.json").exists()
    timing = json.loads((project / "metrics" / ship / "seed0_train_time.json").read_text())
    assert timing["seconds"] > 0 and "--system.seed" in timing["command"]
    # both wheels at the top of packages/: pip finds them there by name (below)
    assert (project / "packages" / "en_entangle_wnut-0.0.1-py3-none-any.whl").exists()
    # the spacy-entangle wheel beside it: `pip install --find-links packages` resolves the requirement
    assert list((project / "packages").glob("spacy_entangle-*-py3-none-any.whl"))
    meta = json.loads((project / "packages" / "en_entangle_wnut-0.0.1" / "meta.json").read_text())
    assert meta["name"] == "entangle_wnut" and meta["lang"] == "en" and meta["version"] == "0.0.1"
    # the plugin, with the extra its inference default (`auto`) predicts with where it needs one
    from spacy_entangle.modeling.inference import AUTO_CPU_MODE, ENGINE_MODES

    extra = "[onnx]" if AUTO_CPU_MODE in ENGINE_MODES else ""
    assert any(r.startswith(f"spacy-entangle{extra}>=") for r in meta["requirements"]), meta["requirements"]
    # the package's performance is what it ships: the beam-decoded ner (add-scores) on dev
    scored = json.loads((project / "metrics" / ship / "seed0_dev_scored.json").read_text())
    assert meta["performance"]["ents_f"] == scored["ents_f"]
    # every licence it holds: WNUT-17 (CC-BY-4.0), MiniLM and the grown encoder's copied layers
    # (Apache-2.0; here the tiny BERT's MiniLM tokenizer), spacy-entangle's own weights (MIT)
    assert meta["sources"][0]["license"] == "CC-BY-4.0"
    assert meta["license"] == "CC-BY-4.0 AND Apache-2.0 AND MIT"
    assert {p["license"] for p in meta["char_encoder"]["licenses"]} == {"Apache-2.0", "MIT"}
    # which variant it is and why (meta/selection.json, the `pretraining` workflow's `select`)
    assert meta["variant"]["name"] == ship and meta["variant"]["chosen_by_selection"]
    assert f"Variant: {ship}, NER on both sides" in meta["description"] and "It was chosen among" in meta["description"]
    assert meta["char_encoder"]["stopped_by"] == "max_steps" and meta["char_encoder"]["steps"] == 3
    # the model card: spaCy's README under the Hugging Face metadata header
    card = (project / "packages" / "en_entangle_wnut-0.0.1" / "README.md").read_text(encoding="utf8")
    header = srsly.yaml_loads(card.split("---\n")[1])
    assert header["library_name"] == "spacy" and header["language"] == ["en"] and header["license"] == "other"
    assert header["license_name"] == "cc-by-4.0-and-apache-2.0-and-mit"
    assert header["model-index"][0]["results"][0]["metrics"][2] == {
        "name": "NER F1",
        "type": "f1",
        "value": round(metrics["ents_f"], 4),
    }
    assert "# Details: en_entangle_wnut" in card or "en_entangle_wnut" in card.split("---\n", 2)[2]
    # unchanged inputs: nothing re-runs
    for command in ["corpus", "train", "package"]:
        _, out = weasel(project, command, v, env=TINY_ENV)
        assert f"Skipping '{command}': nothing changed" in out
    # a changed setting re-runs
    _, out = weasel(project, "train", dict(v, ship_steps=3), env=TINY_ENV, dry=True)
    assert "Skipping" not in out
    # the wheel, installed BY NAME from packages/ (the README's `pip install --find-links
    # packages en_entangle_wnut`) into a folder of its own (not this environment), loaded by name
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site)]
    r = subprocess.run(
        pip + ["--find-links", str(project / "packages"), "en_entangle_wnut==0.0.1"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = offline_env({"PYTHONPATH": str(site)})
    aside = tmp_path / "backbones-aside"  # the package must not need the backbone folders
    (project / "backbones").rename(aside)
    r = subprocess.run(
        [
            sys.executable,
            str(project / "scripts" / "check_package.py"),
            "en_entangle_wnut",
            "--output",
            str(tmp_path / "installed.json"),
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    installed = json.loads((tmp_path / "installed.json").read_text())
    assert installed["pipeline"] == ["entangle", "ner"]
    # the shipped ner is scored_ner: one confidence in [0, 1] per entity
    assert installed["scores"] is not None and len(installed["scores"]) == len(installed["entities"])
    assert all(0.0 <= s <= 1.0 for s in installed["scores"])
    assert installed["location"].startswith(str(site))
    assert installed["labels"] == ["corporation", "creative-work", "group", "location", "person", "product"]
    # spaCy's own tools on the packaged pipeline, through spaCy's CLI in this process (the
    # fresh process above is the by-name load's proof): `benchmark speed` by name, from the
    # install folder, and `debug model` on its config (the backbones back in place: debug
    # model builds from config, with paths relative to the project)
    aside.rename(project / "backbones")
    dev = str(project / "corpus" / "dev.spacy")
    monkeypatch.syspath_prepend(str(site))
    speed = CliRunner().invoke(
        spacy_app, ["benchmark", "speed", "en_entangle_wnut", dev, "--batches", "30", "-b", "4", "-w", "1"]
    )
    assert speed.exit_code == 0 and "words/s" in speed.output, speed.output + repr(speed.exception)
    config = site / "en_entangle_wnut" / "en_entangle_wnut-0.0.1" / "config.cfg"
    monkeypatch.chdir(project)
    debug = CliRunner().invoke(
        spacy_app, ["debug", "model", str(config), "ner", "--paths.train", dev, "--paths.dev", dev]
    )
    assert debug.exit_code == 0 and "model looks good" in " ".join(debug.output.split()), debug.output
    # the baseline workflow's own commands on the same tiny subword backbone
    for command in ["train-baseline", "noisy-dev", "evaluate-noisy", "compare"]:
        _, out = weasel(project, command, v, env=TINY_ENV)
    assert (project / "training" / "baseline" / "seed0" / "model-best" / "meta.json").exists()
    baseline = json.loads((project / "metrics" / "baseline" / "seed0_dev.json").read_text())
    assert {"ents_p", "ents_r", "ents_f", "ents_per_type"} <= set(baseline)
    _, out = weasel(project, "train-baseline", v, env=TINY_ENV)
    assert "Skipping 'train-baseline': nothing changed" in out
    for name in (ship, "baseline"):  # the real evaluation on the noisy copies
        noisy = json.loads((project / "metrics" / name / "seed0_dev_noise0.5.json").read_text())
        assert "ents_f" in noisy
    table = (project / "metrics" / "compare.md").read_text()
    rows = {line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ") and " | 1 |" in line}
    assert rows == {ship, "baseline"}, table
    assert "noisy F1 @0.5" in table and "drop / baseline's" in table
    speed = json.loads((project / "metrics" / "speed.json").read_text())
    assert set(speed["pipelines"]["models"]) == {ship, "baseline"}
    assert (project / "metrics" / "compare.png").exists()
