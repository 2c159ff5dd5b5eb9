"""The task sub-projects project/{tweebank,tweeteval,masakhaner}, driven for real through
`python -m weasel run`, and the shared scripts they use (project/scripts).

Fast: each project.yml (workflows, outputs, configs), the asset checksums against the local
copies in ../shared/data and the pinned URLs, the offline `data` command, the dry runs of the
workflows (CPU and paper presets), foreach.py, compare_task.py, compare_tasks.py; the new CPU
configs trained for 4 steps in this process on converted real data and scored with
evaluate_task.py (the shipped configs themselves: tests/configs/test_configs.py).
Slow (marked `slow`, still part of `make test`): each workflow's own commands through weasel
on a few real sentences, tiny random backbones and 4 training steps: tweebank corpus -> train
-> evaluate -> compare; tweeteval corpus -> train-mean -> compare; masakhaner (per language)
corpus -> train -> evaluate -> compare, then the cross-task table. Every heavy step is a fresh
process that imports torch and spaCy (~3 s of CPU), so the tests leave out `backbones` (the tiny
backbones come from conftest's fixtures), the baselines and the other variants (their configs
train in the fast test above or in configs/test_train.py / test_project.py, and the dry runs check
their command lines). `compare` depends on every model of its workflow, so its script runs
without weasel's dependency check. Each test copies the projects, project/scripts and
configs/ to a temporary folder: the checkout is never written.
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import spacy
import srsly
from _cli import script
from _weasel import offline_env, weasel
from spacy.tokens import DocBin

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "project"
SCRIPTS = PROJECT / "scripts"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
TASKS = {"tweebank": "tweebank", "tweeteval": "tweeteval_emotion", "masakhaner": "masakhaner"}
ALL_LANGUAGES = "amh,hau,ibo,kin,lug,luo,pcm,swa,wol,yor"
PARITY = {"seeds-shipped", "seeds-baseline"}

needs_data = pytest.mark.skipif(
    not all((SHARED / d).is_dir() for d in TASKS.values()), reason="no ../shared/data task folders"
)

TINY_ENV = {
    "ENTANGLE_TRAIN_ARGS": (
        "--components.entangle.model.hidden_width 32 --components.entangle.model.n_heads 2 "
        "--components.entangle.model.ffn_width 64 --nlp.batch_size 16 --training.logger.progress_bar false"
    ),
}


def _copy(dest: Path, *names: str) -> Path:
    """project/NAME (without outputs), project/scripts and configs/, side by side as in the
    checkout (the project.yml files read ../scripts and ../../configs)."""
    ignore = shutil.ignore_patterns(
        "assets", "backbones", "corpus", "training", "metrics", "project.lock", "__pycache__"
    )
    for name in names:
        shutil.copytree(PROJECT / name, dest / "project" / name, ignore=ignore)
    shutil.copytree(SCRIPTS, dest / "project" / "scripts", ignore=ignore)
    if not (dest / "configs").exists():
        shutil.copytree(ROOT / "configs", dest / "configs")
    return dest / "project"


def _config(project: Path, overrides=None):
    from weasel.util import load_project_config

    return load_project_config(project, overrides=overrides or {})


def _script(name, *args, cwd=None):
    """A project script's exit code and output: in this process, but foreach.py, whose
    commands' output goes to the process's own stdout (a subprocess' pipe captures it)."""
    if name != "foreach.py":
        return script(SCRIPTS / name, *args, cwd=cwd)
    return subprocess.run(
        [sys.executable, str(SCRIPTS / name), *map(str, args)],
        capture_output=True,
        text=True,
        env=offline_env(),
        cwd=cwd,
    )


# ---------------------------------------------------------------------------- fast


@pytest.mark.parametrize("name", list(TASKS))
def test_project_yml(tmp_path, name):
    project = _copy(tmp_path, name) / name
    cfg = _config(project)
    commands = {c["name"]: c for c in cfg["commands"]}
    assert list(cfg["workflows"]) == [name, "paper", "parity"]
    assert cfg["workflows"]["parity"] == ["seeds-shipped", "seeds-baseline"]
    workflow = cfg["workflows"][name]
    assert workflow[:3] == ["data", "backbones", "corpus"] and workflow[-1] == "compare"
    assert {"train", "evaluate", "train-baseline"} <= set(workflow)
    for steps in cfg["workflows"].values():
        assert set(steps) <= set(commands)
    made = {o for c in commands.values() for o in c.get("outputs", [])}
    for cname, cmd in commands.items():
        assert cmd.get("help") and cmd.get("outputs"), cname
        # confection merges adjacent list items that are bare variables into "a, b"
        assert not [p for p in cmd.get("deps", []) + cmd["outputs"] if ", " in p], cname
        for dep in cmd.get("deps", []):
            if dep.startswith("../../configs/") or dep == "variants.yml":
                assert (project / dep).is_file(), dep
            else:
                # the parity rows read the grown char encoder that the parent project built once
                parent = dep == cfg["vars"]["grown_dir"] + "/" == "../backbones/grown/"
                assert dep in made or parent or dep == f"{cfg['vars']['data_dir']}/", (
                    f"{cname}: {dep} is made by no command"
                )
        for line in cmd["script"]:
            for used in re.findall(r"\.\./scripts/(\w+\.py)", line):
                assert (PROJECT / "scripts" / used).is_file(), used
    assert (PROJECT / name / "README.md").is_file() and (PROJECT / name / ".gitignore").is_file()
    readme = (PROJECT / name / "README.md").read_text(encoding="utf8")
    assert "## Data and licence" in readme and "## Results" in readme


@needs_data
@pytest.mark.parametrize("name", list(TASKS))
def test_asset_checksums_and_pinned_urls(name):
    from weasel.util import get_checksum

    raw = srsly.read_yaml(PROJECT / name / "project.yml")
    checked = 0
    for asset in raw["assets"]:
        assert re.search(r"/[0-9a-f]{40}/", asset["url"]), asset["url"]  # a fixed commit
        assert asset["description"]
        if asset.get("extra"):
            continue
        local = SHARED / TASKS[name] / asset["dest"].replace("${vars.data_dir}/", "")
        assert get_checksum(local) == asset["checksum"], local
        checked += 1
    assert checked == {"tweebank": 2, "tweeteval": 5, "masakhaner": 20}[name]


@needs_data
@pytest.mark.parametrize("name", list(TASKS))
def test_data_command_offline(tmp_path, name):
    project = _copy(tmp_path, name) / name
    n_assets = len([a for a in srsly.read_yaml(project / "project.yml")["assets"] if not a.get("extra")])
    _, out = weasel(project, "data", {"data_dir": str(SHARED / TASKS[name])})
    assert out.count("Skipping download with matching checksum") == n_assets
    assert not (project / "assets" / TASKS[name]).exists()  # nothing copied


def test_data_command_names_the_fix(tmp_path):
    project = _copy(tmp_path, "tweebank") / "tweebank"
    empty = tmp_path / "nowhere"
    empty.mkdir()
    rc, out = weasel(project, "data", {"data_dir": str(empty)}, check=False)
    if rc == 0:  # there was network and the download worked
        return
    assert "--vars.data_dir" in out and "tweebank" in out


@needs_data
def test_dry_runs(tmp_path):
    root = _copy(tmp_path, *TASKS)
    _, out = weasel(root / "tweebank", "tweebank", {"data_dir": str(SHARED / "tweebank")}, dry=True)
    for part in [
        "init-backbone minilm backbones/minilm",
        "init-backbone canine backbones/canine-random --layers 2 --width 256",
        "convert-conllu",
        "--tag upos",
        "variants.py train-one entangle-char",
        "--max-steps 250",
        "--override corpora.train.gold_preproc=true",
        "variants.py train-one baseline",
        "compare_task.py --task tagger",
    ]:
        assert part in out, part
    _, out = weasel(root / "tweeteval", "tweeteval", {"data_dir": str(SHARED / "tweeteval_emotion")}, dry=True)
    for part in [
        "convert-textcat",
        "variants.py train-one entangle-char",
        "variants.py train-one entangle-mean",
        "variants.py train-one baseline",
        "--max-steps 200",
        "compare_task.py --task textcat",
    ]:
        assert part in out, part
    v = {"data_dir": str(SHARED / "masakhaner"), "languages": "all"}
    _, out = weasel(root / "masakhaner", "masakhaner", v, dry=True)
    for part in [
        f"foreach.py all --all {ALL_LANGUAGES}",
        "convert",
        "--repair-iob",
        "{lang}/train.txt",
        "variants.py train-one entangle",
        "--override nlp.lang=xx",
        "variants.py train-one baseline",
        "compare_task.py --task ner --languages all",
    ]:
        assert part in out, part
    # the paper presets
    _, out = weasel(root / "tweebank", "paper", {"data_dir": str(SHARED / "tweebank")}, dry=True)
    assert "train-one paper " in out and "train-one paper-baseline" in out and "google/canine-s" in out
    _, out = weasel(root / "tweeteval", "paper", {"data_dir": str(SHARED / "tweeteval_emotion")}, dry=True)
    assert "train-one paper " in out and "train-one paper-baseline" in out and "--gpu-id 0" in out
    v = {"data_dir": str(SHARED / "masakhaner"), "paper_subword_backbone": "xlm-roberta-large"}
    _, out = weasel(root / "masakhaner", "paper", v, dry=True)
    assert "train-one paper " in out and "--subword-dir xlm-roberta-large" in out and "--override nlp.lang=xx" in out


def _train_lines(project: Path, overrides=None) -> dict:
    """{command: the `spacy train` line(s) that variants.py writes for its `train-one` lines}
    (their dry runs, in this process from the project folder: one import of spaCy for all of
    them; a per-language line for the language swa)."""
    from weasel.util import split_command

    lines = {}
    for command in _config(project, overrides)["commands"]:
        for line in command["script"]:
            if "variants.py train-one" not in line:
                continue
            while line.startswith("python ../scripts/foreach.py"):  # per language, per seed
                line = line.split(" -- ", 1)[1]
            args = [a.replace("{lang}", "swa").replace("{seed}", "1") for a in split_command(line)]
            assert args[:2] == ["python", "../scripts/variants.py"], args
            cut = args.index("--") if "--" in args else len(args)
            r = script(project / args[1], *args[2:cut], "--dry-run", *args[cut:], cwd=project)
            assert r.returncode == 0, r.output
            lines[command["name"]] = lines.get(command["name"], "") + r.stdout
    return lines


def test_every_task_project_trains_through_its_variants_yml(tmp_path):
    """One way to train, as WNUT's: each task project names its models in its own
    variants.yml and trains each with `variants.py train-one`, which writes the `spacy train`
    line (config, backbones, side, budget, the project's overrides)."""
    root = _copy(tmp_path, *TASKS, "codeswitch")
    tb = _train_lines(root / "tweebank")
    assert set(tb) == {"train", "train-char", "train-baseline", "train-paper", "baseline-paper"} | PARITY | {
        "seeds-shipped-noaug",
        "curve",
        "budget",
    }
    for part in [
        "train ../../configs/tagger_cpu.cfg --output training/entangle",
        "--paths.train corpus/train.spacy",
        "--paths.char_backbone backbones/canine-random",
        "--components.tagger.model.tok2vec.side subword",
        "--training.max_steps 250 --training.optimizer.learn_rate.total_steps 250",
        "--corpora.train.gold_preproc true",
        "--corpora.dev.gold_preproc true",
    ]:
        assert part in tb["train"], part
    assert "--components.tagger.model.tok2vec.side char" in tb["train-char"]
    assert "baseline_tagger_cpu.cfg" in tb["train-baseline"] and "char_backbone" not in tb["train-baseline"]
    assert "--corpora.dev.gold_preproc true" in tb["train-baseline"]
    assert "tagger_paper.cfg" in tb["train-paper"] and "--paths.char_backbone google/canine-s" in tb["train-paper"]
    assert "max_steps" not in tb["train-paper"] and "--paths.subword_backbone roberta-base" in tb["baseline-paper"]
    te = _train_lines(root / "tweeteval")
    assert "--components.textcat.model.side subword" in te["train"]  # TextCatCls: side on the model
    assert "--components.textcat.model.side char" in te["train-char"]
    assert "textcat_cls_cpu.cfg" in te["train"] and "textcat_cls_cpu.cfg" in te["train-char"]
    # the mean-pooling row: the CPU preset's textcat on the subword side, without its augmenter
    mean = te["train-mean"]
    assert "textcat_cpu.cfg" in mean and "--components.textcat.model.tok2vec.side subword" in mean
    assert "--corpora.train.augmenter null" in mean
    # the learning curves: one run to the curve budget, the schedule over it, dev at noise 0.5
    # scored at each evaluation by the curve logger
    for lines, config in [(tb, "tagger_cpu.cfg"), (te, "textcat_cpu.cfg")]:
        curve = lines["curve"]
        assert f"{config} --output training/curves/" in curve and "--paths.char_backbone ../backbones/grown" in curve
        assert "--training.logger.@loggers spacy-entangle.CurveLogger.v1" in curve
        assert "noisy/dev_noise0.5.spacy" in curve and "char_noise_augmenter" in curve
    assert "--training.max_steps 2400 --training.optimizer.learn_rate.total_steps 2400" in tb["curve"]
    # each model's seeds at its own budget: the schedule ends at the budget, the patience never
    # stops a run early, dev at noise 0.5 scored beside dev, one file per seed where
    # curves.py collect-budget looks
    for lines, project in [(tb, "tweebank"), (te, "tweeteval")]:
        vars_ = _config(root / project)["vars"]
        steps, variant = vars_["budget_steps"], vars_["budget_variant"]
        budget = lines["budget"]
        assert f"--training.max_steps {steps} --training.optimizer.learn_rate.total_steps {steps}" in budget
        assert f"--training.patience {steps}" in budget and "noisy/dev_noise0.5.spacy" in budget
        assert f"--training.logger.path metrics/budget/{variant}_{steps}_seed1.jsonl" in budget
    mk = _train_lines(root / "masakhaner", {"vars.paper_subword_backbone": "xlm-roberta-large"})
    for part in ["ner_cpu.cfg --output training/entangle/swa", "--paths.train corpus/swa/train.spacy", "--nlp.lang xx"]:
        assert part in mk["train"], part
    assert "--nlp.lang xx" in mk["train-baseline"] and "--components.ner.model.tok2vec.side char" in mk["train-char"]
    assert "--paths.subword_backbone xlm-roberta-large" in mk["train-paper"]
    # its curves per language, the same recipe and schedule shape as the other tasks'
    assert "ner_cpu.cfg --output training/curves/swa/both-mild/seed0" in mk["curve"]
    assert "--training.logger.@loggers spacy-entangle.CurveLogger.v1" in mk["curve"]
    assert "noisy/swa/dev_noise0.5.spacy" in mk["curve"] and "char_noise_augmenter" in mk["curve"]
    assert "--training.max_steps 4000 --training.optimizer.learn_rate.total_steps 4000" in mk["curve"]
    # and its seeds at a budget, per language (the placeholders: swa, seed 1)
    steps = _config(root / "masakhaner")["vars"]["budget_steps"]
    assert f"--training.max_steps {steps} " in mk["budget"] and f"--training.patience {steps}" in mk["budget"]
    assert (
        "--output training/budget/swa/both-mild-" in mk["budget"]
        and "--paths.train corpus/swa/train.spacy" in mk["budget"]
    )
    assert "--training.logger.path metrics/budget/swa/both-mild_" in mk["budget"]
    cs = _train_lines(root / "codeswitch")
    assert "char_tagger_cpu.cfg" in cs["train"] and "--components.char_tagger.model.side char" in cs["train"]
    assert "char_tagger_charonly_cpu.cfg" in cs["train-charonly"]
    assert "--components.entangle.model.hidden_width 256" in cs["train-charonly"]
    # the paper-parity rows: the shipped recipe (the grown char encoder of the parent project,
    # both sides where a first state per token allows, the augmenter where the labels survive it)
    # and its baseline, seed by seed
    grown = "--paths.char_backbone ../backbones/grown"
    for lines, config, side, augment in [
        (tb, "tagger_cpu.cfg", "--components.tagger.model.tok2vec.side both", True),
        (te, "textcat_cls_cpu.cfg", "--components.textcat.model.side subword", True),
        (mk, "ner_cpu.cfg", "--components.ner.model.tok2vec.side both", True),
        (cs, "char_tagger_cpu.cfg", "--components.char_tagger.model.side char", True),
    ]:
        shipped = lines["seeds-shipped"]
        assert f"{config} --output training/shipped/" in shipped and grown in shipped and side in shipped
        assert "--system.seed 1" in shipped and "--paths.subword_backbone backbones/minilm" in shipped
        assert ("char_noise_augmenter" in shipped) is augment, config
    assert "--output training/shipped/swa/seed1" in mk["seeds-shipped"] and "--nlp.lang xx" in mk["seeds-shipped"]
    # the ablation: the same recipe less the augmenter, into its own folders
    for lines, config, side in [
        (tb, "tagger_cpu.cfg", "both"),
        (te, "textcat_cls_cpu.cfg", "subword"),
        (cs, "char_tagger_cpu.cfg", "--components.char_tagger.model.side char"),
    ]:
        noaug = lines["seeds-shipped-noaug"]
        assert f"{config} --output training/shipped-noaug/seed1" in noaug and grown in noaug and side in noaug
        assert "char_noise_augmenter" not in noaug and "--system.seed 1" in noaug
    for lines in (tb, te, mk):
        assert "baseline_" in lines["seeds-baseline"] and "char_backbone" not in lines["seeds-baseline"]
        assert "augmenter" not in lines["seeds-baseline"] and "--system.seed 1" in lines["seeds-baseline"]
    charonly = cs["seeds-charonly"]
    assert "char_tagger_charonly_cpu.cfg" in charonly and grown in charonly
    assert "--components.entangle.model.hidden_width 384" in charonly


def test_foreach(tmp_path):
    log = tmp_path / "log.txt"
    cmd = ["--", "python", "-c", f"open({str(log)!r}, 'a').write('{{lang}}\\n')"]
    r = _script("foreach.py", "swa,yor,swa", "--all", ALL_LANGUAGES, *cmd)
    assert r.returncode == 0, r.stderr
    assert log.read_text().split() == ["swa", "yor"]  # in order, duplicates dropped
    log.unlink()
    r = _script("foreach.py", "all", "--all", ALL_LANGUAGES, *cmd)
    assert r.returncode == 0 and log.read_text().split() == ALL_LANGUAGES.split(",")
    # a misspelt language fails before anything runs
    log.unlink()
    r = _script("foreach.py", "swa,xyz", "--all", ALL_LANGUAGES, *cmd)
    assert r.returncode == 1 and "unknown item(s) xyz" in r.stderr and not log.exists()
    r = _script("foreach.py", "all", *cmd)
    assert r.returncode == 1 and "no --all list" in r.stderr
    # another placeholder; the first failure stops the loop with its exit code
    r = _script(
        "foreach.py",
        "a,b",
        "--placeholder",
        "@",
        "--",
        "python",
        "-c",
        f"import sys; open({str(log)!r}, 'a').write('@'); sys.exit(3 if '@' == 'a' else 0)",
    )
    assert r.returncode == 3 and log.read_text() == "a" and "a failed with exit code 3" in r.stderr
    assert _script("foreach.py", "swa").returncode != 0  # no command
    # the command's own `--` (variants.py train-one ... -- EXTRA) and options reach it untouched
    log.unlink()
    echo = f"import sys; open({str(log)!r}, 'w').write(' '.join(sys.argv[1:]))"
    r = _script("foreach.py", "swa", "--", "python", "-c", echo, "--", "--all", "{lang}")
    assert r.returncode == 0 and log.read_text() == "-- --all swa", r.stderr


def _scores(**kw):
    return dict({"token_acc": 1.0, "n_docs": 10, "n_words": 100, "gold_preproc": True}, **kw)


def test_compare_task_single_and_per_language(tmp_path):
    m = tmp_path / "metrics"
    m.mkdir()
    per_label = {"anger": {"p": 0.5, "r": 0.5, "f": 0.5}, "joy": {"p": 1.0, "r": 0.8, "f": 0.9}}
    srsly.write_json(m / "entangle_dev.json", _scores(cats_macro_f=0.7, cats_accuracy=0.75, cats_f_per_type=per_label))
    srsly.write_json(m / "baseline_dev.json", _scores(cats_macro_f=0.6, cats_accuracy=0.7, cats_f_per_type=per_label))
    srsly.write_json(m / "train_time_entangle.json", {"seconds": 90})
    r = _script(
        "compare_task.py",
        "--task",
        "textcat",
        "--metrics-dir",
        m,
        "--row",
        "entangle-subword=entangle",
        "--row",
        "entangle-char=entangle_char",
        "--row",
        "baseline=baseline",
        "--title",
        "T",
    )
    assert r.returncode == 0, r.stderr
    table = (m / "compare.md").read_text()
    lines = [line for line in table.splitlines() if line.startswith("|")]
    assert lines[0] == "| model | macro-F1 | accuracy | anger F1 | joy F1 | train time |"
    assert lines[2] == "| entangle-subword | 70.00 | 75.00 | 50.00 | 90.00 | 1.5 min |"
    assert lines[3] == "| baseline | 60.00 | 70.00 | 50.00 | 90.00 | – |"
    assert table.startswith("## T") and "entangle-char: no" in table
    # per language: rows = languages, the macro average over the languages every model has
    for prefix, values in {
        "entangle": {"swa": 0.8, "yor": 0.6, "hau": 0.5},
        "baseline": {"swa": 0.7, "yor": 0.5},
    }.items():
        (m / prefix).mkdir()
        for lang, f in values.items():
            srsly.write_json(m / prefix / f"{lang}_dev.json", _scores(ents_f=f))
    (tmp_path / "training" / "entangle" / "swa").mkdir(parents=True)
    srsly.write_json(tmp_path / "training" / "entangle" / "swa" / "train_time.json", {"seconds": 120})
    r = _script(
        "compare_task.py",
        "--task",
        "ner",
        "--metrics-dir",
        m,
        "--training-dir",
        tmp_path / "training",
        "--languages",
        "swa,yor,hau",
        "--all-languages",
        ALL_LANGUAGES,
        "--row",
        "entangle-subword=entangle",
        "--row",
        "baseline=baseline",
        "--output",
        m / "per_lang.md",
    )
    assert r.returncode == 0, r.stderr
    table = (m / "per_lang.md").read_text()
    lines = [line for line in table.splitlines() if line.startswith("|")]
    assert lines[0] == "| language | entangle-subword | baseline | entangle-subword − baseline |"
    assert lines[2] == "| swa | 80.00 | 70.00 | +10.00 |"
    assert lines[4] == "| hau | 50.00 | – | – |"
    assert lines[5] == "| **macro avg** (2) | **70.00** | **60.00** | **+10.00** |"
    assert "macro avg over swa, yor only: hau" in table and "entangle-subword 2.0 min" in table
    r = _script(
        "compare_task.py",
        "--task",
        "ner",
        "--metrics-dir",
        m,
        "--languages",
        "zzz",
        "--all-languages",
        ALL_LANGUAGES,
        "--row",
        "a=entangle",
    )
    assert r.returncode != 0 and "unknown item(s) zzz" in r.stderr
    r = _script("compare_task.py", "--task", "tagger", "--metrics-dir", tmp_path / "none", "--row", "a=b")
    assert r.returncode != 0 and "no metrics to compare" in r.stderr


def test_compare_tasks_table(tmp_path):
    root = tmp_path / "project"
    wnut, tb, te, mk = (
        root / "metrics",
        root / "tweebank" / "metrics",
        root / "tweeteval" / "metrics",
        root / "masakhaner" / "metrics",
    )
    for folder in (
        wnut / "entangle",
        wnut / "entangle-char",
        wnut / "baseline",
        tb,
        te,
        mk / "entangle",
        mk / "baseline",
    ):
        folder.mkdir(parents=True)
    # WNUT-17: metrics/VARIANT/seedN_dev.json, averaged over the seeds
    for name, values in {"entangle": (0.53, 0.55), "entangle-char": (0.227,), "baseline": (0.517,)}.items():
        for seed, value in enumerate(values):
            srsly.write_json(wnut / name / f"seed{seed}_dev.json", _scores(ents_f=value))
    srsly.write_json(te / "entangle_dev.json", _scores(cats_macro_f=0.6, cats_accuracy=0.7))
    srsly.write_json(te / "entangle_mean_dev.json", _scores(cats_macro_f=0.65, cats_accuracy=0.72))
    srsly.write_json(te / "baseline_dev.json", _scores(cats_macro_f=0.5, cats_accuracy=0.6))
    for lang, (e, b) in {"swa": (0.8, 0.7), "yor": (0.6, 0.4), "hau": (0.5, None)}.items():
        srsly.write_json(mk / "entangle" / f"{lang}_dev.json", _scores(ents_f=e))
        if b is not None:
            srsly.write_json(mk / "baseline" / f"{lang}_dev.json", _scores(ents_f=b))
    r = _script("compare_tasks.py", "--root", root)
    assert r.returncode == 0, r.stderr
    table = (wnut / "compare_tasks.md").read_text()
    lines = [line for line in table.splitlines() if line.startswith("|")]
    assert (
        lines[0]
        == "| task | score | entangle-subword | entangle-char | entangle-mean | baseline | subword − baseline |"
    )
    assert lines[2] == "| WNUT-17 NER | dev F1 | 54.00 | 22.70 | – | 51.70 | +2.30 |"
    assert lines[3] == "| TweetEval emotion | val macro-F1 | 60.00 | – | 65.00 | 50.00 | +10.00 |"
    assert lines[4] == "| TweetEval emotion | val accuracy | 70.00 | – | 72.00 | 60.00 | +10.00 |"
    assert lines[5] == "| MasakhaNER | dev F1 | 70.00 | – | – | 55.00 | +15.00 |"
    assert len(lines) == 6
    assert "Tweebank v2 POS: no cpu metrics" in table and "macro average over 2 language(s): swa, yor" in table
    r = _script("compare_tasks.py", "--root", root, "--preset", "paper")
    assert r.returncode != 0 and "no task has metrics yet" in r.stderr


def _evaluate_task():
    """project/scripts/evaluate_task.py (on the test path: setup.cfg's pytest pythonpath)."""
    import evaluate_task

    return evaluate_task


@pytest.fixture(scope="module")
def task_corpora(tmp_path_factory, shared_data):
    """Small real corpora made by the converters: Tweebank (UPOS in tag_) and TweetEval."""
    from spacy_entangle.converters.conllu import convert_conllu
    from spacy_entangle.converters.textcat import convert_textcat

    out = tmp_path_factory.mktemp("task_corpora")
    for split, n in (("train", 24), ("dev", 8)):
        _conllu_subset(shared_data / "tweebank" / f"{split}.conllu", out / f"tb_{split}.conllu", n)
        convert_conllu(out / f"tb_{split}.conllu", out / f"tb_{split}.spacy", tag_from="upos")
    emo = shared_data / "tweeteval_emotion"
    for split, n, name in (("train", 32, "train"), ("val", 12, "dev")):
        for kind in ("text", "labels"):
            lines = (emo / f"{split}_{kind}.txt").read_text(encoding="utf8").split("\n")[:n]
            (out / f"te_{split}_{kind}.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
        convert_textcat(
            out / f"te_{split}_text.txt", out / f"te_{split}_labels.txt", emo / "mapping.txt", out / f"te_{name}.spacy"
        )
    return out


@needs_data
@pytest.mark.parametrize(
    "name,corpus,score",
    [
        ("baseline_tagger_cpu.cfg", "tb", "tag_acc"),
        ("baseline_textcat_cpu.cfg", "te", "cats_accuracy"),
        ("textcat_cpu.cfg", "te", "cats_accuracy"),
    ],
)
def test_new_cpu_configs_train(task_corpora, bert_dir, canine_dir, tmp_path, name, corpus, score):
    """The new CPU configs train a few steps (spaCy's own `train`, in this process: a fresh
    process would cost more than the training) and score on dev (evaluate_task.py)."""
    import spacy
    from spacy.cli.train import train

    overrides = {
        "paths.train": str(task_corpora / f"{corpus}_train.spacy"),
        "paths.dev": str(task_corpora / f"{corpus}_dev.spacy"),
        "paths.subword_backbone": str(bert_dir),
        "training.max_steps": 4,
        "training.eval_frequency": 2,
        "training.logger.progress_bar": False,
        "nlp.batch_size": 16,
    }
    if corpus == "tb":  # as the tweebank project trains: the corpus's own tokens
        overrides.update({"corpora.train.gold_preproc": True, "corpora.dev.gold_preproc": True})
    if name.startswith("textcat"):
        overrides.update(
            {
                "paths.char_backbone": str(canine_dir),
                "components.entangle.model.hidden_width": 32,
                "components.entangle.model.n_heads": 2,
                "components.entangle.model.ffn_width": 64,
            }
        )
    train(ROOT / "configs" / name, tmp_path / "out", overrides=overrides)
    nlp = spacy.load(tmp_path / "out" / "model-best")
    scores = _evaluate_task().evaluate(nlp, task_corpora / f"{corpus}_dev.spacy", gold_preproc=corpus == "tb")
    assert scores[score] is not None and 0 <= scores[score] <= 1
    if corpus == "te":  # exclusive classes: accuracy = micro F (one prediction, one gold label per doc)
        assert scores["cats_accuracy"] == pytest.approx(scores["cats_micro_f"])
        assert set(nlp.get_pipe("textcat").labels) == {"anger", "joy", "optimism", "sadness"}


# ---------------------------------------------------------------------------- slow


def _conllu_subset(src: Path, dest: Path, n: int) -> None:
    blocks = [b for b in src.read_text(encoding="utf8").split("\n\n") if b.strip()]
    dest.write_text("\n\n".join(blocks[:n]) + "\n\n", encoding="utf8")


def _run_commands(project: Path, commands, v) -> None:
    for command in commands:
        weasel(project, command, v, env=TINY_ENV)


def _run_script(project: Path, command: str, v) -> str:
    """A command's own script lines (vars resolved as weasel does) without weasel's
    dependency check: `compare` depends on every model of the workflow, and the tests train
    only some of them."""
    from weasel.util import split_command

    cfg = _config(project, {f"vars.{key}": value for key, value in v.items()})
    out = ""
    for line in next(c for c in cfg["commands"] if c["name"] == command)["script"]:
        args = split_command(line)
        args[0] = sys.executable if args[0] == "python" else args[0]
        r = subprocess.run(args, capture_output=True, text=True, env=offline_env(TINY_ENV), cwd=project)
        assert r.returncode == 0, f"{line} failed:\n{r.stdout[-3000:]}{r.stderr[-3000:]}"
        out += r.stdout
    return out


def _tiny_vars(data: Path, bert_dir: Path, canine_dir: Path) -> dict:
    return {
        "data_dir": str(data),
        "subword_dir": str(bert_dir),
        "char_dir": str(canine_dir),
        "max_steps": 4,
        "eval_frequency": 2,
    }


@pytest.mark.slow
@needs_data
def test_tweebank_workflow(tmp_path, bert_dir, canine_dir):
    project = _copy(tmp_path, "tweebank") / "tweebank"
    data = tmp_path / "data"
    data.mkdir()
    _conllu_subset(SHARED / "tweebank" / "train.conllu", data / "train.conllu", 24)
    _conllu_subset(SHARED / "tweebank" / "dev.conllu", data / "dev.conllu", 8)
    v = _tiny_vars(data, bert_dir, canine_dir)
    _run_commands(project, ["corpus", "train", "evaluate"], v)
    _run_script(project, "compare", v)
    docs = list(DocBin().from_disk(project / "corpus" / "dev.spacy").get_docs(spacy.blank("en").vocab))
    texts = re.findall(r"^# text = (.*)$", (data / "dev.conllu").read_text(encoding="utf8"), flags=re.M)
    assert [d.text for d in docs] == texts and all(t.tag_ == t.pos_ for d in docs for t in d)
    # the entangle tagger, trained on tweets with whitespace tokens, on gold tokens
    nlp = spacy.load(project / "training" / "entangle" / "model-best")
    assert nlp.pipe_names == ["entangle", "tagger"] and "PROPN" in nlp.get_pipe("tagger").labels
    assert json.loads((project / "metrics" / "train_time_entangle.json").read_text())["seconds"] > 0
    metrics = json.loads((project / "metrics" / "entangle_dev.json").read_text())
    assert metrics["tag_acc"] is not None and metrics["n_docs"] == 8 and metrics["gold_preproc"] is True
    table = (project / "metrics" / "compare.md").read_text()
    assert "| entangle-subword |" in table and "UPOS acc" in table and "baseline: no" in table


@pytest.mark.slow
@needs_data
def test_tweeteval_workflow(tmp_path, bert_dir, canine_dir):
    project = _copy(tmp_path, "tweeteval") / "tweeteval"
    src, data = SHARED / "tweeteval_emotion", tmp_path / "data"
    data.mkdir()
    shutil.copy(src / "mapping.txt", data / "mapping.txt")
    for split, n in (("train", 32), ("val", 12)):
        for kind in ("text", "labels"):
            lines = (src / f"{split}_{kind}.txt").read_text(encoding="utf8").split("\n")[:n]
            (data / f"{split}_{kind}.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    v = _tiny_vars(data, bert_dir, canine_dir)
    _run_commands(project, ["corpus", "train-mean"], v)
    _run_script(project, "compare", v)
    metrics = json.loads((project / "metrics" / "entangle_mean_dev.json").read_text())
    assert 0 <= metrics["cats_accuracy"] <= 1 and metrics["cats_macro_f"] is not None
    assert set(metrics["cats_f_per_type"]) == {"anger", "joy", "optimism", "sadness"}
    assert metrics["n_docs"] == 12
    lines = [line for line in (project / "metrics" / "compare.md").read_text().splitlines() if line.startswith("| ")]
    assert [line.split(" | ")[0] for line in lines[1:]] == ["| entangle-mean"]
    docs = list(DocBin().from_disk(project / "corpus" / "dev.spacy").get_docs(spacy.blank("en").vocab))
    assert [d.text for d in docs] == (data / "val_text.txt").read_text(encoding="utf8").split("\n")[:12]


@pytest.mark.slow
@needs_data
def test_masakhaner_workflow_and_cross_task_table(tmp_path, bert_dir, canine_dir):
    root = _copy(tmp_path, "masakhaner")
    project = root / "masakhaner"
    data = tmp_path / "data"
    for split, n in (("train", 24), ("dev", 8)):
        src = SHARED / "masakhaner" / "swa" / f"{split}.txt"
        blocks = [b for b in re.split(r"\n\s*\n", src.read_text(encoding="utf8")) if b.strip()][:n]
        (data / "swa").mkdir(parents=True, exist_ok=True)
        (data / "swa" / f"{split}.txt").write_text("\n\n".join(blocks) + "\n", encoding="utf8")
    v = dict(_tiny_vars(data, bert_dir, canine_dir), languages="swa")
    _run_commands(project, ["corpus", "train", "evaluate"], v)
    _run_script(project, "compare", v)
    assert (project / "corpus" / "swa" / "train.spacy").exists()
    metrics = json.loads((project / "metrics" / "entangle" / "swa_dev.json").read_text())
    assert {"ents_f", "ents_p", "ents_r", "ents_per_type"} <= set(metrics) and metrics["n_docs"] == 8
    assert json.loads((project / "training" / "entangle" / "swa" / "train_time.json").read_text())["seconds"] > 0
    nlp = spacy.load(project / "training" / "entangle" / "swa" / "model-best")
    assert nlp.lang == "xx" and set(nlp.get_pipe("ner").labels) <= {"PER", "ORG", "LOC", "DATE"}
    table = (project / "metrics" / "compare.md").read_text()
    assert "| swa |" in table and "**macro avg** (1)" in table and "baseline: no" in table
    # folder outputs: nothing re-runs when nothing changed; another language list does
    for command in ("corpus", "train", "evaluate"):
        _, out = weasel(project, command, v, env=TINY_ENV)
        assert f"Skipping '{command}': nothing changed" in out
    _, out = weasel(project, "train", dict(v, languages="swa,yor"), env=TINY_ENV, dry=True)
    assert "Skipping" not in out
    # the cross-task table over this project's metrics (the other tasks have not run here)
    r = _script("compare_tasks.py", "--root", root)
    assert r.returncode == 0, r.stderr
    assert "| MasakhaNER | dev F1 |" in (root / "metrics" / "compare_tasks.md").read_text()
