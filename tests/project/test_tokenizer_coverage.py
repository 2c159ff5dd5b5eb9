"""project/scripts/tokenizer_coverage.py: what the uncased WordPiece keeps of a corpus's words,
on real .spacy files and MiniLM's real tokenizer (the bert_dir fixture's)."""

import shutil
from pathlib import Path

import spacy
from _cli import script
from _weasel import weasel
from spacy.tokens import DocBin

SCRIPT = Path(__file__).resolve().parents[2] / "project" / "scripts" / "tokenizer_coverage.py"


def _corpus(path: Path, texts) -> Path:
    nlp = spacy.blank("xx")
    path.parent.mkdir(parents=True, exist_ok=True)
    DocBin(docs=[nlp.make_doc(t) for t in texts]).to_disk(path)
    return path


def _run(*args):
    return script(SCRIPT, *args)


def test_unknown_and_normalized_words_per_language(tmp_path, bert_dir):
    # Ge'ez script is [UNK] to the English WordPiece; Yorùbá's marks are stripped ("Ọjọ́" -> "ojo");
    # a capital alone is the lowercasing, not counted
    _corpus(tmp_path / "corpus" / "amh" / "dev.spacy", ["ሰላም hello"])
    _corpus(tmp_path / "corpus" / "yor" / "dev.spacy", ["Ọjọ́ Hello", "ilé"])
    r = _run(tmp_path / "corpus", "--tokenizer", bert_dir)
    assert r.returncode == 0, r.stderr
    assert "| amh | 2 | 50.0% | 0.0% |" in r.stdout
    assert "| yor | 3 | 0.0% | 66.7% |" in r.stdout


def test_empty_corpus_and_bad_paths(tmp_path, bert_dir):
    empty = _corpus(tmp_path / "empty.spacy", [])
    r = _run(empty, "--tokenizer", bert_dir)
    assert r.returncode == 0 and "| empty | 0 | – | – | – |" in r.stdout
    r = _run(tmp_path / "missing.spacy", "--tokenizer", bert_dir)
    assert r.returncode != 0 and "no such corpus" in r.stderr
    (tmp_path / "nothing").mkdir()
    r = _run(tmp_path / "nothing", "--tokenizer", bert_dir)
    assert r.returncode != 0 and "no */dev.spacy" in r.stderr


def test_masakhaner_runs_it_as_a_weasel_command(tmp_path, bert_dir):
    """`python -m weasel run tokenizer-coverage` in project/masakhaner (a copy: the checkout is
    never written) prints the table over its corpus/LANG/dev.spacy files."""
    ignore = shutil.ignore_patterns("assets", "backbones", "corpus", "training", "metrics", "project.lock")
    project = tmp_path / "project" / "masakhaner"
    shutil.copytree(SCRIPT.parents[1] / "masakhaner", project, ignore=ignore)
    shutil.copytree(SCRIPT.parent, tmp_path / "project" / "scripts", ignore=ignore)
    _corpus(project / "corpus" / "amh" / "dev.spacy", ["ሰላም hello"])
    _, out = weasel(project, "tokenizer-coverage", {"subword_dir": bert_dir})
    assert "| amh | 2 | 50.0% | 0.0% |" in out
    assert "| amh | 2 | 50.0% | 0.0% |" in (project / "metrics" / "tokenizer_coverage.md").read_text(encoding="utf8")
