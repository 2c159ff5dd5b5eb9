"""`annotate`: local and Ray Data engines, inputs, errors report, shards, manifest and resuming."""

import json
from pathlib import Path

import pytest
import spacy
from _pipelines import build, examples
from spacy.language import Language
from spacy.tokens import DocBin
from spacy.util import minibatch
from typer.testing import CliRunner

from spacy_entangle.annotate import annotate
from spacy_entangle.annotate.readers import expand_inputs
from spacy_entangle.cli import app

PATTERNS = [{"label": "LOC", "pattern": "Paris"}, {"label": "PER", "pattern": [{"LOWER": "obama"}]}]


@Language.component("annotate_test_boom")
def boom(doc):
    """Raises on one doc, so the whole batch it sits in fails in nlp.pipe."""
    if "BOOM" in doc.text:
        raise RuntimeError("boom in this doc")
    return doc


class BatchBoom:
    """Like spaCy's trainable components: `pipe` runs whole batches, no error handler."""

    def __init__(self, nlp: Language, name: str):
        self.name = name

    def __call__(self, doc):
        return boom(doc)

    def pipe(self, docs, batch_size: int = 128):
        for batch in minibatch(docs, size=batch_size):
            yield from [self(doc) for doc in batch]


@Language.factory("annotate_test_batch_boom")
def make_batch_boom(nlp: Language, name: str) -> BatchBoom:
    return BatchBoom(nlp, name)


def save_ruler(path: Path, boom_too: str = "") -> Path:
    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler").add_patterns(PATTERNS)
    if boom_too:
        nlp.add_pipe(boom_too)
    nlp.to_disk(path)
    return path


@pytest.fixture(scope="module")
def ruler(tmp_path_factory) -> Path:
    return save_ruler(tmp_path_factory.mktemp("ruler") / "pipeline")


@pytest.fixture
def corpus(tmp_path) -> Path:
    """23 docs and 5 bad lines over .txt, .jsonl and .parquet files in one folder."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    lines = [f"post {i}: Obama in Paris ✨" if i % 4 else "" for i in range(16)]  # 12 docs, 4 blank lines
    (root / "posts.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    (root / "sub" / "posts.jsonl").write_bytes(
        b'{"id": "a1", "text": "obama"}\n'
        b'{"text": 3}\n'  # not a string
        b"{oops\n"  # not JSON
        b'{"body": "x"}\n'  # no text key
        b"\xff\xfe\n"  # not UTF-8
        b'["a list"]\n'  # not an object
        b'{"text": "Paris \xc3\xa9t\xc3\xa9"}\n'
    )
    table = pa.table({"id": [f"p{i}" for i in range(10)], "text": [f"row {i} Paris" for i in range(9)] + [None]})
    pq.write_table(table, root / "rows.parquet", row_group_size=4)
    (root / "notes.md").write_text("not an input")
    return root


def read_jsonl(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf8").splitlines()]


def outputs(out: Path) -> dict:
    """Shard name -> bytes (manifest and errors left out)."""
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name not in ("manifest.json", "errors.jsonl")}


def all_docs(out: Path) -> list:
    return [doc for path in sorted(out.glob("*-0*.jsonl")) for doc in read_jsonl(path)]


def test_expand_inputs_files_globs_folders(corpus, tmp_path):
    out = corpus / "out"
    out.mkdir()
    (out / "old-shard.jsonl").write_text("{}\n")
    files = expand_inputs([corpus, str(corpus / "*.txt"), corpus / "rows.parquet"], exclude=out)
    assert [p.name for p in files] == ["posts.txt", "rows.parquet", "posts.jsonl"]
    with pytest.raises(ValueError, match="no such file"):
        expand_inputs([tmp_path / "missing.txt"])
    with pytest.raises(ValueError, match="unsupported file type"):
        expand_inputs([corpus / "notes.md"])
    with pytest.raises(ValueError, match="matches no"):
        expand_inputs([str(tmp_path / "*.jsonl")])


def test_local_reads_all_formats_and_reports_bad_lines(ruler, corpus, tmp_path):
    out = tmp_path / "out"
    summary = annotate(ruler, [corpus], out, shard_size=4, progress=False)
    docs = all_docs(out)
    errors = read_jsonl(out / "errors.jsonl")
    assert (summary.docs_in, summary.docs_out, summary.errors) == (12 + 7 + 10, 12 + 2 + 9, 6)
    assert summary.docs_in == summary.docs_out + summary.errors == len(docs) + len(errors)
    by_id = {d["id"]: d for d in docs}
    assert len(by_id) == len(docs)
    txt = str(corpus / "posts.txt")
    assert by_id[f"{txt}:2"] == {
        "id": f"{txt}:2",
        "text": "post 1: Obama in Paris ✨",
        "entities": [{"start": 8, "end": 13, "label": "PER"}, {"start": 17, "end": 22, "label": "LOC"}],
    }
    assert by_id["a1"]["entities"] == [{"start": 0, "end": 5, "label": "PER"}]
    assert by_id[f"{corpus / 'sub' / 'posts.jsonl'}:7"]["text"] == "Paris été"
    assert by_id["p3"]["text"] == "row 3 Paris"  # parquet rows keep their id column
    reasons = {(Path(e["source"]).name, e["line"]): e["reason"] for e in errors}
    assert set(reasons) == {("posts.jsonl", n) for n in (2, 3, 4, 5, 6)} | {("rows.parquet", 10)}
    assert "not JSON" in reasons["posts.jsonl", 3] and "not UTF-8" in reasons["posts.jsonl", 5]
    assert "no text under key 'text'" in reasons["posts.jsonl", 4]
    assert "not a JSON object" in reasons["posts.jsonl", 6]
    manifest = json.loads((out / "manifest.json").read_text())
    assert sum(s["docs_out"] for s in manifest["shards"].values()) == len(docs)
    assert sorted(s["file"] for s in manifest["shards"].values()) == sorted(p.name for p in out.glob("*-0*.jsonl"))


@pytest.mark.parametrize("component", ["annotate_test_boom", "annotate_test_batch_boom"])
def test_doc_that_raises_is_an_error_and_its_batch_survives(component, tmp_path):
    pipeline = save_ruler(tmp_path / "pipeline", boom_too=component)
    (tmp_path / "in.txt").write_text("Paris one\nBOOM Paris\nParis three\nfour\nfive\n")
    summary = annotate(pipeline, [tmp_path / "in.txt"], tmp_path / "out", batch_size=2, shard_size=2, progress=False)
    assert (summary.docs_in, summary.docs_out, summary.errors) == (5, 4, 1)
    assert [d["text"] for d in all_docs(tmp_path / "out")] == ["Paris one", "Paris three", "four", "five"]
    (error,) = read_jsonl(tmp_path / "out" / "errors.jsonl")
    assert error["line"] == 2 and error["reason"] == "RuntimeError: boom in this doc"


def test_spacy_format_keeps_ids(ruler, tmp_path):
    (tmp_path / "in.jsonl").write_text('{"id": 7, "text": "Obama"}\n{"text": "in Paris"}\n')
    annotate(ruler, [tmp_path / "in.jsonl"], tmp_path / "out", fmt="spacy", progress=False)
    (shard,) = (tmp_path / "out").glob("*.spacy")
    docs = list(DocBin().from_disk(shard).get_docs(spacy.blank("en").vocab))
    assert [d.user_data["id"] for d in docs] == [7, f"{tmp_path / 'in.jsonl'}:2"]
    assert [[(e.text, e.label_) for e in d.ents] for d in docs] == [[("Obama", "PER")], [("Paris", "LOC")]]


def test_empty_input(ruler, tmp_path):
    (tmp_path / "empty.txt").write_text("")
    summary = annotate(ruler, [tmp_path / "empty.txt"], tmp_path / "out", progress=False)
    assert (summary.docs_in, summary.docs_out, summary.errors, summary.shards_written) == (0, 0, 0, 0)
    assert (tmp_path / "out" / "errors.jsonl").read_text() == ""
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["shards"] == {}


def test_output_folder_with_other_files_is_left_alone(ruler, corpus):
    out = corpus / "out"  # inside the input folder: its files must not be read as inputs
    (out / "keep").mkdir(parents=True)
    (out / "readme.txt").write_text("mine")
    (out / "keep" / "data.jsonl").write_text('{"text": "not an input"}\n')
    first = annotate(ruler, [corpus], out, shard_size=4, progress=False)
    second = annotate(ruler, [corpus], out, shard_size=4, progress=False)
    assert (out / "readme.txt").read_text() == "mine"
    assert (out / "keep" / "data.jsonl").read_text() == '{"text": "not an input"}\n'
    assert "not an input" not in json.dumps(all_docs(out))
    assert second.shards_written == 0 and second.docs_out == first.docs_out


def test_foreign_manifest_or_other_arguments_refused(ruler, corpus, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_text('{"name": "someone else\'s"}')
    with pytest.raises(ValueError, match="not a manifest of"):
        annotate(ruler, [corpus], out, progress=False)
    (out / "manifest.json").unlink()
    annotate(ruler, [corpus], out, shard_size=4, progress=False)
    with pytest.raises(ValueError, match="other arguments.*shard_size"):
        annotate(ruler, [corpus], out, shard_size=5, progress=False)


def test_resume_writes_every_doc_exactly_once(ruler, corpus, tmp_path):
    full = tmp_path / "full"
    annotate(ruler, [corpus], full, shard_size=4, progress=False)
    expected = outputs(full)
    # an interrupted run: one shard lost, one written but never recorded, a temp file left over
    out = tmp_path / "out"
    annotate(ruler, [corpus], out, shard_size=4, progress=False)
    names = sorted(expected)
    (out / names[0]).unlink()
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["shards"][names[1].rsplit(".", 1)[0]]
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / f".{names[2]}.123.abcdef12.tmp").write_text('{"half": ')
    summary = annotate(ruler, [corpus], out, shard_size=4, progress=False)
    assert (summary.shards_written, summary.shards_skipped) == (2, len(names) - 2)
    assert outputs(out) == expected
    ids = [d["id"] for d in all_docs(out)]
    assert len(ids) == len(set(ids)) == summary.docs_out


def test_local_n_process_2_same_bytes(ruler, corpus, tmp_path):
    annotate(ruler, [corpus], tmp_path / "one", shard_size=4, progress=False)
    annotate(ruler, [corpus], tmp_path / "two", shard_size=4, n_process=2, batch_size=3, progress=False)
    assert outputs(tmp_path / "two") == outputs(tmp_path / "one")


def test_entangle_pipeline_writes_entities_tags_cats(canine_dir, bert_dir, tmp_path):
    nlp = build(canine_dir, bert_dir)
    nlp.initialize(lambda: examples(nlp))
    nlp.to_disk(tmp_path / "pipeline")
    (tmp_path / "in.txt").write_text("@john went to Paris!!!\nso sad that Bowie died 😢\n", encoding="utf8")
    summary = annotate(tmp_path / "pipeline", [tmp_path / "in.txt"], tmp_path / "out", progress=False)
    assert (summary.docs_out, summary.errors) == (2, 0)
    for doc in all_docs(tmp_path / "out"):
        assert set(doc) == {"id", "text", "entities", "tags", "cats"}
        assert set(doc["cats"]) == {"joy", "sadness", "anger"}
        assert [t["end"] for t in doc["tags"]][-1] == len(doc["text"])


def test_cli_summary_and_clear_errors(ruler, corpus, tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["annotate", str(ruler), str(corpus), str(tmp_path / "out"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "29 docs in = 23 docs out + 6 errors" in result.output
    result = runner.invoke(app, ["annotate", str(tmp_path / "nope"), str(corpus), str(tmp_path / "out2")])
    assert result.exit_code == 1 and "✘ annotate failed: PIPELINE" in result.output
    result = runner.invoke(app, ["annotate", str(ruler), str(corpus), str(tmp_path / "o3"), "--n-process", "0"])
    assert result.exit_code == 1 and "--n-process must be >= 1" in result.output


@pytest.fixture(scope="module")
def ray_local():
    """One local Ray instance for the module: 2 CPUs, no dashboard."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_matches_local_resumes_a_local_run_and_logs_no_error_line(ray_local, ruler, corpus, tmp_path, capfd):
    """Ray finishes a run the local engine left half done, byte for byte. Ray Data's actors
    restart by default, and Ray's core worker then logs an error-level line (core_worker.cc:
    "constructor arguments in the object store and max_restarts > 0") once per process (so
    this is the module's first Ray run); the engine asks for no restarts (a failed run resumes
    instead)."""
    local = tmp_path / "local"
    annotate(ruler, [corpus], local, shard_size=4, progress=False)
    # same arguments, any engine
    out = tmp_path / "out"
    annotate(ruler, [corpus], out, shard_size=4, progress=False)
    names = sorted(outputs(local))
    for name in names[::2]:
        (out / name).unlink()
    capfd.readouterr()
    summary = annotate(ruler, [corpus], out, shard_size=4, engine="ray", num_workers=2, progress=False)
    err = capfd.readouterr().err
    assert "max_restarts" not in err and "core_worker.cc" not in err, err
    assert summary.shards_written == len(names[::2]) and summary.shards_skipped == len(names) - len(names[::2])
    assert outputs(out) == outputs(local)  # entities byte for byte
    assert (out / "errors.jsonl").read_bytes() == (local / "errors.jsonl").read_bytes()
    assert summary.docs_in == summary.docs_out + summary.errors == 29
    with pytest.raises(ValueError, match="does not fit the Ray cluster"):
        annotate(ruler, [corpus], tmp_path / "o2", engine="ray", num_workers=3, progress=False)


def _tweets(path: Path, n_docs: int) -> Path:
    """n_docs different tweets (a DocBin is compressed: repeated docs would hide their size)."""
    path.write_text(
        "".join(f"@user{i} went to Paris!!! day {i} so sad {i * 7919 % 1000} 😢\n" for i in range(n_docs)),
        encoding="utf8",
    )
    return path


def _engine_peak(nlp: Language, n_docs: int, tmp_path: Path, shard_size: int = 10) -> int:
    """Traced peak memory of the local engine over n_docs tweets, the pipeline loaded before."""
    import tracemalloc

    from spacy_entangle.annotate.engines import run_local
    from spacy_entangle.annotate.readers import plan_shards

    specs = plan_shards([_tweets(tmp_path / f"peak{n_docs}.txt", n_docs)], shard_size)
    tracemalloc.start()
    try:
        run_local(
            nlp,
            specs,
            tmp_path,
            fmt="spacy",
            text_key="text",
            on_result=lambda entry: None,
            batch_size=8,
            progress=False,
        )
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_annotate_keeps_no_encoder_states(canine_dir, bert_dir, tmp_path):
    """Even a pipeline saved with store_output on: the shards hold the annotations only,
    and memory does not grow with the number of docs (shards of 10)."""
    nlp = build(canine_dir, bert_dir, components=("ner", "tagger"), store_output=True)
    nlp.initialize(lambda: examples(nlp))
    nlp.to_disk(tmp_path / "pipeline")
    annotate(
        tmp_path / "pipeline",
        [_tweets(tmp_path / "in.txt", 40)],
        tmp_path / "out",
        fmt="spacy",
        shard_size=10,
        progress=False,
    )
    shards = sorted((tmp_path / "out").glob("*.spacy"))
    per_doc = sum(path.stat().st_size for path in shards) / 40
    docs = [doc for path in shards for doc in DocBin().from_disk(path).get_docs(nlp.vocab)]
    assert len(docs) == 40 and all(doc.user_data.keys() == {"id"} for doc in docs)
    loaded = spacy.load(tmp_path / "pipeline")
    peak, peak_2 = _engine_peak(loaded, 40, tmp_path), _engine_peak(loaded, 80, tmp_path)
    print(f"shard bytes per doc {per_doc:.0f}, traced peak {peak:,} / {peak_2:,} (40 / 80 docs)")
    assert per_doc < 400  # with the states: ~7 KB per doc at width 32
    assert (peak_2 - peak) / 40 < 2000  # flat: no state kept, no doc kept beyond its shard


@pytest.fixture(scope="module")
def scored(tmp_path_factory, canine_dir, bert_dir) -> Path:
    """entangle + an entity_ruler + `scored_ner` (entities' scores in doc.spans["ents"]) + a
    span_ruler (a span group without scores), saved."""
    from spacy_entangle.pipeline.scored_ner import load_scored

    nlp = build(canine_dir, bert_dir, components=("ner",))
    nlp.initialize(lambda: examples(nlp))
    # (after initialize: the rulers run the pipeline over their phrase patterns)
    nlp.add_pipe("entity_ruler", before="ner").add_patterns(PATTERNS)
    nlp.add_pipe("span_ruler").add_patterns([{"label": "CITY", "pattern": "Paris"}])
    root = tmp_path_factory.mktemp("scored")
    nlp.to_disk(root / "greedy")
    load_scored(root / "greedy", beam_width=4).to_disk(root / "scored")
    return root / "scored"


SCORED_TEXTS = ["Obama in Paris", "@john went to Paris!!!", "so sad that Bowie died 😢", "nothing here"]


def _spans(doc, key) -> list:
    group = doc.spans[key]
    scores = group.attrs.get("scores")
    out = [{"start": s.start_char, "end": s.end_char, "label": s.label_} for s in group]
    for span, score in zip(out, [] if scores is None else scores):
        span["score"] = float(score)
    return out


def test_annotate_keeps_entity_scores_and_span_groups(scored, tmp_path):
    """What the pipeline produced, in the JSONL: each entity's score (scored_ner's
    doc.spans["ents"]) and every span group; and in the DocBin shards."""
    (tmp_path / "in.txt").write_text("\n".join(SCORED_TEXTS) + "\n", encoding="utf8")
    annotate(scored, [tmp_path / "in.txt"], tmp_path / "out", progress=False)
    nlp = spacy.load(scored)
    written = all_docs(tmp_path / "out")
    assert [doc["text"] for doc in written] == SCORED_TEXTS
    for line, text in zip(written, SCORED_TEXTS):
        doc = nlp(text)
        assert line["entities"] == _spans(doc, "ents")
        assert line["spans"] == {"ents": _spans(doc, "ents"), "ruler": _spans(doc, "ruler")}
    entities = [ent for line in written for ent in line["entities"]]
    assert entities and all(0.0 <= ent["score"] <= 1.0 for ent in entities)
    assert {span["label"] for line in written for span in line["spans"]["ruler"]} == {"CITY"}
    assert all("score" not in span for line in written for span in line["spans"]["ruler"])
    # the Ray engine's actor class writes the same bytes (its code path, without a cluster)
    from spacy_entangle.annotate.engines import ShardAnnotator
    from spacy_entangle.annotate.readers import plan_shards

    (spec,) = plan_shards([tmp_path / "in.txt"], 10000)
    actor = ShardAnnotator(str(scored), str(tmp_path / "actor"), "jsonl", "text", None, False)
    (tmp_path / "actor").mkdir()
    actor({"spec": [json.dumps(spec.to_dict())]})
    assert outputs(tmp_path / "actor") == outputs(tmp_path / "out")
    annotate(scored, [tmp_path / "in.txt"], tmp_path / "bin", fmt="spacy", progress=False)
    (shard,) = (tmp_path / "bin").glob("*.spacy")
    for doc, text in zip(DocBin().from_disk(shard).get_docs(nlp.vocab), SCORED_TEXTS):
        assert _spans(doc, "ents") == _spans(nlp(text), "ents") and _spans(doc, "ruler") == _spans(nlp(text), "ruler")


@pytest.mark.slow
def test_ray_keeps_entity_scores_and_span_groups_as_local_does(ray_local, scored, tmp_path):
    (tmp_path / "in.txt").write_text("\n".join(SCORED_TEXTS) + "\n", encoding="utf8")
    annotate(scored, [tmp_path / "in.txt"], tmp_path / "local", progress=False)
    annotate(scored, [tmp_path / "in.txt"], tmp_path / "ray", engine="ray", num_workers=1, progress=False)
    assert outputs(tmp_path / "ray") == outputs(tmp_path / "local")
    written = all_docs(tmp_path / "ray")
    assert all("score" in ent for line in written for ent in line["entities"]) and "spans" in written[0]
