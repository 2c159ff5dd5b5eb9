"""One rule for progress bars (spacy_entangle/progress.py): drawn on a terminal, quiet when
stderr is not one (CI logs, a piped `spacy project run`), with a plain line per checkpoint
where a long run reports progress; pretrain-chars, perturb and annotate follow it."""

import io

import spacy
from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

from spacy_entangle.annotate import annotate
from spacy_entangle.backbone_dirs import sample_lines
from spacy_entangle.noise import perturb_corpus
from spacy_entangle.pretraining import PretrainSettings, pretrain_chars
from spacy_entangle.progress import bars_wanted, log_line, progress_bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_is_drawn_on_a_terminal_only():
    tty, log = Terminal(), io.StringIO()
    assert list(progress_bar(range(3), file=tty, desc="x")) == [0, 1, 2]
    assert "\r" in tty.getvalue() and "3/3" in tty.getvalue()
    assert list(progress_bar(range(3), file=log, desc="x")) == [0, 1, 2] and log.getvalue() == ""
    off = Terminal()
    list(progress_bar(range(3), file=off, enabled=False))
    assert off.getvalue() == ""


def test_a_log_gets_lines_where_a_terminal_gets_a_bar(capsys):
    """Under pytest stderr is captured (not a terminal), as in CI."""
    assert not bars_wanted(True) and not bars_wanted(False)
    bar = progress_bar(total=2)
    log_line(bar, True, "step 2/2")
    log_line(bar, False, "not asked for")
    bar.close()
    assert capsys.readouterr().err == "step 2/2\n"
    on_tty = progress_bar(total=2, file=Terminal())
    log_line(on_tty, True, "the bar shows it")
    assert capsys.readouterr().err == ""


def test_pretrain_chars_writes_one_line_per_checkpoint_to_a_log(tmp_path, capsys):
    text = tmp_path / "t.txt"
    text.write_text("\n".join(sample_lines()[:64]) + "\n", encoding="utf8")
    settings = PretrainSettings(max_steps=2, batch_size=4, warmup_steps=0, log_every=1, checkpoint_every=100)
    pretrain_chars([text], tmp_path / "chars", settings, config="canine-tiny", progress=True)
    err = capsys.readouterr().err
    assert "pretrain-chars:" not in err  # no bar redraws in the log (transformers 5 draws its own on saving)
    lines = [line for line in err.splitlines() if line.startswith("pretrain-chars step")]
    assert len(lines) == 1 and lines[0].startswith("pretrain-chars step 2/2: mlm_loss ")


def test_perturb_and_annotate_draw_no_bar_into_a_log(tmp_path, capsys):
    vocab = Vocab()
    docs = [Doc(vocab, words=["watching", "Star", "Wars", "tonight"]) for _ in range(2000)]  # bar size
    DocBin(docs=docs).to_disk(tmp_path / "in.spacy")
    perturb_corpus(tmp_path / "in.spacy", tmp_path / "out.spacy", 0.5, progress=True)
    spacy.blank("en").to_disk(tmp_path / "blank")
    (tmp_path / "in.txt").write_text("one tweet\nanother tweet\n", encoding="utf8")
    annotate(tmp_path / "blank", [tmp_path / "in.txt"], tmp_path / "annotated", progress=True)
    err = capsys.readouterr().err
    assert "perturb:" not in err and "line/s" not in err and "line]" not in err, err
