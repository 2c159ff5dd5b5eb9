"""research/benchmarks/speed.py end to end on the tiny random backbones (issue 12): every part
runs and prints its rows, and --output holds the figures; speed_compare.py times trained
pipelines side by side (the project's `compare`)."""

import json
from pathlib import Path

import pytest
import spacy
import speed as speed_module  # research/benchmarks/speed.py (setup.cfg: pytest pythonpath)
import speed_compare
import speed_data
import speed_flops
import speed_stages
import speed_timing
import torch
from spacy.tokens import Doc, DocBin

from spacy_entangle.layers.entangle_model import entangle_shim

REPO = Path(__file__).resolve().parents[3]  # research/tests/benchmarks/ -> the checkout
SENTENCES = [
    ("Going to Paris with Anna tomorrow", "O O B-location O B-person O"),
    ("@john_doe the new iPhone is sooo good", "O O O B-product O O O"),
    ("Watching Star Wars in London tonight lol", "O B-creative-work I-creative-work O B-location O O"),
    ("omg this weather in Seattle", "O O O O B-location"),
    ("Taylor Swift played Wembley last night", "B-person I-person O B-location O O"),
    ("can't wait 4 tmrw #MUFC", "O O O O B-group"),
]


@pytest.fixture(scope="module")
def speed():
    return speed_module


@pytest.fixture
def conll(tmp_path) -> Path:
    lines = []
    for text, tags in SENTENCES:
        lines += [f"{w}\t{t}" for w, t in zip(text.split(), tags.split())] + [""]
    path = tmp_path / "dev.conll"
    path.write_text("\n".join(lines), encoding="utf8")
    return path


@pytest.mark.slow
def test_speed_benchmark_end_to_end(speed, conll, tmp_path, canine_dir, bert_dir, capsys):
    pytest.importorskip("spacy_transformers")  # it times the baseline too (the `baseline` extra)
    backbones = {"paths.char_backbone": str(canine_dir), "paths.subword_backbone": str(bert_dir)}
    sents = speed_data.read_conll(conll)
    trained = speed_data.pipeline_from_config(REPO / "configs" / "ner_cpu.cfg", backbones, sents)
    trained.to_disk(tmp_path / "model")
    dev = DocBin(docs=[Doc(trained.vocab, words=w, ents=t) for w, t in sents])
    dev.to_disk(tmp_path / "dev.spacy")
    out = tmp_path / "speed.json"
    results = speed.main(
        [
            "--data",
            str(conll),
            "--char",
            str(canine_dir),
            "--subword",
            str(bert_dir),
            "--limit",
            "6",
            "--repeats",
            "1",
            "--batch-size",
            "4",
            "--lengths",
            "300,900",
            "--length-chars",
            "900",
            "--model",
            str(tmp_path / "model"),
            "--dev",
            str(tmp_path / "dev.spacy"),
            "--output",
            str(out),
            "--paper-shapes",
            "--paper-layers",
            "1",
            "--paper-width",
            "32",
            "--paper-heads",
            "2",
            "--paper-batch",
            "4",
        ]
    )
    printed = capsys.readouterr().out
    for title in (
        "1. speed",
        "2. trained pipeline",
        "3. doc length",
        "4. stages",
        "5. forward multiply-adds",
        "6. paper shapes",
    ):
        assert title in printed
    for row in (
        "entangle fp32",
        "entangle int8",
        "entangle bf16",
        "spacy-transformers",
        "co-attention",
        "listener + ner",
        "predict",
        "train",
        "measured / FLOP ratio",
    ):
        assert row in printed
    assert json.loads(out.read_text(encoding="utf8")) == results
    pipelines = results["speed"]["pipelines"]
    assert pipelines["spacy-transformers"]["vs_baseline"] == 1.0
    for mode in speed_data.MODES:
        assert pipelines[f"entangle {mode}"]["words_per_second"] > 0
        trained_mode = results["trained"]["modes"][mode]
        assert trained_mode["score"] == "ents_f" and 0.0 <= trained_mode["ents_f"] <= 1.0
    assert results["trained"]["modes"]["fp32"]["score_change"] == 0.0
    assert set(results["lengths"]) == {"tweet", "300", "900"}
    assert results["lengths"]["900"]["chars_per_doc"] >= 900
    for _, label in speed_stages.STAGES:  # the lead's record_function labels are all seen
        assert results["stages"][label] > 0, label
    macs = results["flops"]["macs"]
    assert macs["entangle fp32"] > macs["spacy-transformers"] > 0
    paper = results["paper_shapes"]
    assert paper["words"] > 0 and paper["shapes"] == "1 layers, 32 wide, 2 heads"
    for step in ("predict", "train"):
        assert paper[step]["seconds"] > 0 and paper[step]["peak_mib"] > 0


def test_long_texts_reach_the_length(speed):
    sents = [(text.split(), tags.split()) for text, tags in SENTENCES]
    docs = speed_data.long_texts(sents, 500, budget=1500)
    assert len(docs) == 3
    assert all(speed_data.n_chars([doc]) >= 500 for doc in docs)


def test_flops_count_fused_and_cpu_attention(speed):
    """FlopCounterMode alone sees 0 FLOPs in nn.TransformerEncoderLayer's inference fast
    path and in the CPU scaled_dot_product_attention kernel."""
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True).eval()
    x = torch.randn(2, 5, 16)

    def predict(_docs):
        with torch.inference_mode():
            layer(x)

    linear = 2 * 2 * 5 * (4 * 16 * 16 + 2 * 16 * 32)  # q, k, v, out + the two FFN layers
    attention = 2 * 2 * 2 * (2 * 5 * 5 * 8)  # QK^T and AV, 2 heads of 8
    assert speed_flops.forward_flops(predict, [None], 1) == linear + attention
    assert torch.backends.mha.get_fastpath_enabled()  # restored


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--model", "m"], "--model and --dev go together"),
        (["--lengths", "1k"], "--lengths must be comma-separated integers"),
        (["--repeats", "0"], "--repeats must be >= 1"),
        (["--limit", "-1"], "--limit must be >= 0"),
    ],
)
def test_bad_arguments_name_the_option(speed, conll, argv, message, capsys):
    with pytest.raises(SystemExit):
        speed.parse_args(["--data", str(conll), *argv])
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--pipelines", "nameless"], "expected NAME=DIR"),
        (["--pipelines", "a=b", "--repeats", "0"], "--repeats must be >= 1"),
        ([], "the following arguments are required: --pipelines"),
    ],
)
def test_compare_bad_arguments_name_the_option(conll, argv, message, capsys):
    with pytest.raises(SystemExit):
        speed_compare.parse_args(["--data", str(conll), *argv])
    assert message in capsys.readouterr().err


def test_model_without_entangle_is_refused(speed, tmp_path):
    with pytest.raises(ValueError, match="not a spaCy pipeline directory"):
        speed_data.entangle_name(tmp_path)


def test_pipelines_side_by_side(speed, tmp_path, capsys):
    nlp = spacy.blank("en")
    docs = [nlp.make_doc(f"tweet number {i} from @someone about New York") for i in range(30)]
    DocBin(docs=docs).to_disk(tmp_path / "dev.spacy")
    for name, pipes in [("a", ["sentencizer"]), ("b", ["sentencizer", "entity_ruler"])]:
        pipeline = spacy.blank("en")
        for pipe in pipes:
            pipeline.add_pipe(pipe)
        pipeline.to_disk(tmp_path / name)
    out = tmp_path / "speed.json"
    results = speed_compare.main(
        [
            "--data",
            str(tmp_path / "dev.spacy"),
            "--limit",
            "0",
            "--repeats",
            "2",
            "--output",
            str(out),
            "--pipelines",
            f"first={tmp_path / 'a'}",
            f"missing={tmp_path / 'nope'}",
            f"second={tmp_path / 'b'}",
        ]
    )
    printed = capsys.readouterr().out
    assert "missing: no" in printed and "speed ratio first : second" in printed
    part = json.loads(out.read_text())["pipelines"]
    assert part == results["pipelines"] and "speed" not in results  # only this part ran
    assert part["reference"] == "first" and list(part["models"]) == ["first", "second"]
    assert part["words"] == sum(len(d) for d in docs) and part["docs"] == 30
    assert part["models"]["first"]["relative_to_reference"] == 1.0
    assert all(m["words_per_second"] > 0 for m in part["models"].values())


def test_compare_times_entangle_pipelines_in_each_inference_mode(tmp_path):
    """--modes fp32 int8 (issue 25: the shipped variant's ratio to the baseline in fp32 and
    int8, side by side): a pipeline with an `entangle` component runs once per mode, set
    through the load config as a user would; a pipeline without one runs once."""
    saved = REPO / "tests" / "fixtures" / "tiny" / "pipeline_663406e"
    nlp = spacy.blank("en")
    DocBin(docs=[nlp.make_doc(f"tweet {i} about Paris and @NASA") for i in range(8)]).to_disk(tmp_path / "dev.spacy")
    nlp.to_disk(tmp_path / "blank")
    loaded = speed_compare.load_modes("ent", saved, ["fp32", "int8"])
    assert list(loaded) == ["ent", "ent@int8"]
    modes = [entangle_shim(p.get_pipe("entangle").model)._predict_mode for p in loaded.values()]
    assert modes == ["fp32", "int8"]
    args = ["--data", str(tmp_path / "dev.spacy"), "--repeats", "1", "--modes", "fp32", "int8"]
    results = speed_compare.main([*args, "--pipelines", f"base={tmp_path / 'blank'}", f"ent={saved}"])
    assert list(results["pipelines"]["models"]) == ["base", "ent", "ent@int8"]
    assert results["pipelines"]["models"]["ent@int8"]["model"] == str(saved)
    with pytest.raises(SystemExit):
        speed_compare.parse_args([*args[:2], "--modes", "int4", "--pipelines", f"ent={saved}"])


def test_compare_reads_the_pipelines_from_a_file(tmp_path, capsys):
    """The project writes its trained pipelines' paths (scripts/variants.py pipelines) and
    passes the file as @FILE: the benchmark knows no folder layout."""
    nlp = spacy.blank("en")
    DocBin(docs=[nlp.make_doc("one tweet about Paris")]).to_disk(tmp_path / "dev.spacy")
    nlp.to_disk(tmp_path / "b")
    listed = tmp_path / "pipelines.txt"
    listed.write_text(f"absent={tmp_path / 'nope'}\nbaseline={tmp_path / 'b'}\n", encoding="utf8")
    results = speed_compare.main(["--data", str(tmp_path / "dev.spacy"), "--repeats", "1", "--pipelines", f"@{listed}"])
    assert list(results["pipelines"]["models"]) == ["baseline"]
    assert "absent: no" in capsys.readouterr().out


def test_conll_is_read_by_the_converters_reader(tmp_path):
    """The benchmarks read CoNLL as `convert` does: a bad tag is an error naming its line
    (a laxer copy read it as a word), an orphan I- tag is read as B-."""
    bad = tmp_path / "bad.conll"
    bad.write_text("Paris\tB-location\nrocks\tLOC\n", encoding="utf8")
    with pytest.raises(ValueError, match=r"bad.conll:2.*invalid tag 'LOC'"):
        speed_data.read_conll(bad)
    orphan = tmp_path / "orphan.conll"
    orphan.write_text("in\tO\nNew\tI-location\nYork\tI-location\n", encoding="utf8")
    assert speed_data.read_conll(orphan) == [(["in", "New", "York"], ["O", "B-location", "I-location"])]


def test_modes_are_the_components_inference_modes():
    from spacy_entangle.modeling.inference import INFERENCE_MODES

    assert speed_data.MODES is INFERENCE_MODES


def test_spacy_corpus_gives_words_and_bio_tags(speed, tmp_path):
    nlp = spacy.blank("en")
    doc = nlp.make_doc("Anna flew to New York")
    doc.ents = [doc.char_span(0, 4, "person"), doc.char_span(13, 21, "location")]
    DocBin(docs=[doc, nlp.make_doc("")]).to_disk(tmp_path / "dev.spacy")
    assert speed_data.read_sentences(tmp_path / "dev.spacy") == [
        (["Anna", "flew", "to", "New", "York"], ["B-person", "O", "O", "B-location", "I-location"])
    ]


def test_compare_agreement_of_the_onnx_engine_with_fp32(tmp_path, capsys):
    """--modes fp32 onnx --agreement: the ONNX engine predicts what fp32 predicts on the same
    docs, its entangle states within float rounding (the table the README reports)."""
    pytest.importorskip("onnxruntime")
    saved = REPO / "tests" / "fixtures" / "tiny" / "pipeline_663406e"
    nlp = spacy.blank("en")
    DocBin(docs=[nlp.make_doc(f"tweet {i} about Paris and @NASA") for i in range(8)]).to_disk(tmp_path / "dev.spacy")
    args = ["--data", str(tmp_path / "dev.spacy"), "--repeats", "1", "--modes", "fp32", "onnx", "--agreement"]
    results = speed_compare.main([*args, "--pipelines", f"ent={saved}"])
    agreement = results["agreement"]["ent@onnx"]
    assert agreement["same_predictions"] == 1.0
    assert agreement["max_diff_subword"] < 1e-4
    assert "agreement with each pipeline's first mode" in capsys.readouterr().out


@pytest.mark.slow
def test_speed_targets_print_every_target_the_default_first(tmp_path, paris_dev, capsys):
    """research/benchmarks/speed_targets.py: one command, every target as a ratio with met/missed
    (speeds side by side, the pipeline's default first with its load + first doc in a fresh
    process, each mode's F1 cost on the clean and the noisy corpus, a long doc's speed, the
    memory a long doc adds in child processes), the CPU's int8 features beside each."""
    import shutil

    import speed_targets

    saved = REPO / "tests" / "fixtures" / "tiny" / "pipeline_663406e"
    shutil.copy(paris_dev, tmp_path / "noisy.spacy")
    spacy.blank("en").to_disk(tmp_path / "blank")
    out = tmp_path / "targets.json"
    args = ["--data", str(tmp_path / "dev.spacy"), "--noisy", str(tmp_path / "noisy.spacy"), "--limit", "0"]
    args += ["--repeats", "1", "--doc-repeats", "1", "--modes", "int8", "--doc-chars", "300"]
    # the largest doc's memory row runs the same child as the --memory-chars one: off here
    args += ["--memory-chars", "300", "--max-chars", "0", "--load-repeats", "1", "--output", str(out)]
    results = speed_targets.main([*args, "--baseline", str(tmp_path / "blank"), "--entangle", str(saved)])
    printed = capsys.readouterr().out
    targets = [t["target"] for t in results["targets"]]
    # the default first (this pipeline was saved in fp32): words/s, F1 cost, load + first doc
    assert len(targets) == 12 and "the default (fp32) words/s" in targets[0]
    assert [t.split(" on ")[-1] for t in targets[1:3]] == ["dev.spacy", "noisy.spacy"]
    assert "load + first doc" in targets[3] and results["load_to_first_doc_seconds"]["entangle"] > 0
    assert "fastest opt-in (int8)" in targets[4]
    assert [t.split(" on ")[-1] for t in targets[5:7]] == ["dev.spacy", "noisy.spacy"]
    # the long doc in the default, fp32 and the short docs' fastest opt-in mode
    assert [t.split(": ")[-1].split(" words/s")[0] for t in targets[8:11]] == [
        "the default (fp32)",
        "entangle fp32",
        "entangle int8",
    ]
    assert "300-char doc: peak RSS added, entangle vs baseline" in targets[11]
    with_int8 = bool(speed_timing.cpu_int8_features())
    for t in results["targets"]:
        assert t["measured"] and t["cpu_int8"] == speed_timing.cpu_int8_features()
        no_target = t["target"].startswith("300-char doc: the default") and not with_int8
        assert t["met"] is None if no_target else t["met"] in (True, False)
    assert results["f1_cost_points"]["entangle@fp32"] == {"dev.spacy": 0.0, "noisy.spacy": 0.0}
    assert "the targets" in printed and ("met" in printed or "MISSED" in printed)
    assert f"[CPU int8: {speed_timing.cpu_int8_label()}]" in printed
    assert json.loads(out.read_text())["targets"] == results["targets"]


def test_cpu_int8_features_are_read_from_the_cpu_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse avx512f avx512_vnni amx_bf16 amx_int8\n", encoding="utf8")
    assert speed_timing.cpu_int8_features.__wrapped__(str(info)) == ["AVX512-VNNI", "AMX-INT8"]
    info.write_text("flags\t\t: fpu sse avx2\n", encoding="utf8")
    assert speed_timing.cpu_int8_features.__wrapped__(str(info)) == []


@pytest.mark.slow
def test_compare_times_onnx_int8_with_named_graph_nodes_in_float(tmp_path, capsys):
    """--float-nodes LABEL=REGEX: NAME@onnx-int8+LABEL predicts in onnx-int8 with the nodes
    REGEX matches in float (the what-if int8_accuracy.py --keep-float-nodes scores), timed in
    the same rounds, with --what-if-smoothing's smoothing; the plain onnx-int8 copy keeps none
    and has the default's smoothing (off); a bad regex or alpha is a clear error."""
    pytest.importorskip("onnxruntime")
    from spacy_entangle.modeling import inference
    from spacy_entangle.modeling.engines.onnx import kept_float_nodes

    saved = REPO / "tests" / "fixtures" / "tiny" / "pipeline_663406e"
    nlp = spacy.blank("en")
    DocBin(docs=[nlp.make_doc(f"tweet {i} about Paris and @NASA") for i in range(8)]).to_disk(tmp_path / "dev.spacy")
    ffn = r"subword_encoder/.*layer\.\d+/output/dense"
    default = inference.ONNX_INT8_FLOAT_NODES, inference.ONNX_INT8_SMOOTHING
    loaded = speed_compare.load_modes("ent", saved, ["fp32", "onnx-int8"], [("ffn", ffn), ("all-int8", "")], 0.5)
    assert list(loaded) == ["ent", "ent@onnx-int8", "ent@onnx-int8+ffn", "ent@onnx-int8+all-int8"]
    assert (inference.ONNX_INT8_FLOAT_NODES, inference.ONNX_INT8_SMOOTHING) == default
    for pipe in loaded.values():
        list(pipe.pipe(["tweet about Paris and @NASA"]))
    copies = {name: entangle_shim(p.get_pipe("entangle").model)._fast_model for name, p in loaded.items()}
    kept = kept_float_nodes(copies["ent@onnx-int8+ffn"])
    assert kept and all(node.startswith("subword_encoder/") and "/output/dense/" in node for node in kept)
    # the default: every node in int8, not smoothed; the what-ifs here smoothed (alpha 0.5)
    default_copy = copies["ent@onnx-int8"]
    assert kept_float_nodes(default_copy) == [] and not default_copy.subword_encoder.smoothed
    assert kept_float_nodes(copies["ent@onnx-int8+all-int8"]) == []
    assert copies["ent@onnx-int8+ffn"].subword_encoder.smoothed
    args = ["--data", str(tmp_path / "dev.spacy"), "--repeats", "1", "--modes", "fp32", "onnx-int8"]
    results = speed_compare.main([*args, "--float-nodes", f"ffn={ffn}", "--pipelines", f"ent={saved}"])
    assert list(results["pipelines"]["models"]) == ["ent", "ent@onnx-int8", "ent@onnx-int8+ffn"]
    with pytest.raises(SystemExit):
        speed_compare.parse_args([*args[:2], "--float-nodes", "ffn=layer(", "--pipelines", f"ent={saved}"])
    with pytest.raises(SystemExit):
        speed_compare.parse_args([*args[:2], "--what-if-smoothing", "1.5", "--pipelines", f"ent={saved}"])
    assert "--float-nodes 'ffn=layer('" in capsys.readouterr().err


def test_the_smoothing_option_takes_off_or_an_alpha_in_0_1():
    """int8_accuracy.py --smoothing / speed_compare.py --what-if-smoothing: 'off' is None (no
    smoothing), an alpha must lie in [0, 1]; anything else is argparse's clear error."""
    import argparse

    from int8_accuracy import smoothing_alpha

    assert smoothing_alpha("off") is None
    assert smoothing_alpha("0.5") == 0.5 and smoothing_alpha("0") == 0.0 and smoothing_alpha("1") == 1.0
    for bad in ("1.5", "-0.1", "half", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="alpha"):
            smoothing_alpha(bad)
