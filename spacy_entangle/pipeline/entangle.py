"""The `entangle` component: runs the entanglement model once per batch and feeds
every downstream listener (ner, tagger, textcat, ...), like spacy-transformers'
`transformer` component."""

import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, Union, cast

import srsly
from spacy import util
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer, set_dropout_rate

from ..data import (
    POOLERS,
    SIDES,
    EntangleData,
    Pooling,
    Side,
    drop_kept_outputs,
    install_doc_extensions,
    keep_output,
    pooled_token_vectors,
    side_names,
)
from ..layers.contract import get_rows, get_sides, set_keep_rows, set_sides
from ..layers.entangle_model import entangle_shim
from ..layers.listener import EntangleListener, OutputStore, no_backprop
from ..modeling.inference import InferenceSetting, check_inference_mode
from ..noise.consistency import NoiseConsistency
from ..training.budget import config_budget_problems
from .attention import label_attention
from .deferred import DeferredBackward
from .linking import ListenerLinks

DEFAULT_CONFIG = """
[model]
@architectures = "spacy-entangle.EntangleModel.v1"
char_backbone = "google/canine-s"
subword_backbone = "roberta-base"
n_coattention = 2
"""


LONG_DOC_CHARS = 1000  # store_attention warns above this: the maps grow with length squared
# cfg keys that do not shape the weights: the config the pipeline is loaded with wins
# over the saved cfg (spacy.load(path, config={...}) overrides them)
RUNTIME_CFG = ("frozen", "store_output")


def release_states(nlp: Language, docs: Iterable[Doc]) -> None:
    """Drop every entangle state on or for ``docs`` (``doc._.entangle``, the attention
    maps, what a listener has not read yet): bulk annotation keeps and ships only the
    annotations."""
    docs = list(docs)
    for _, proc in nlp.components:
        if isinstance(proc, Entangle):
            proc.release(docs)
    for doc in docs:
        drop_kept_outputs(doc)
        if doc.has_extension("entangle_attention") and doc._.entangle_attention is not None:
            doc._.entangle_attention = None


def check_doc_tensor(side: Optional[str], pooling: str) -> Tuple[Optional[Side], Pooling]:
    """The doc_tensor settings, or a clear error (the config validates them too; this
    catches the Python constructor)."""
    if side is not None:
        side_names(side)
    if pooling not in POOLERS:
        raise ValueError(f"doc_tensor_pooling must be one of {', '.join(map(repr, POOLERS))}, got {pooling!r}")
    return cast(Optional[Side], side), cast(Pooling, pooling)


def set_doc_tensors(docs: List[Doc], outputs: List[EntangleData], side: Side, pooling: Pooling) -> None:
    """``doc.tensor`` = one pooled vector per token (a copy per doc: no doc keeps the
    batch's array alive)."""
    for doc, vectors in zip(docs, pooled_token_vectors(outputs, side, pooling)):
        doc.tensor = vectors.copy()  # type: ignore[assignment]  # float32: spaCy's doc.pyi says float64


def install_extensions() -> None:
    install_doc_extensions()
    if not Doc.has_extension("entangle_attention"):
        Doc.set_extension("entangle_attention", default=None)


@Language.factory(
    "entangle",
    default_config={
        "model": util.load_config_from_str(DEFAULT_CONFIG)["model"],
        "frozen": False,
        "store_output": False,
        "inference": "fp32",
        "store_attention": False,
        "doc_tensor": None,
        "doc_tensor_pooling": "mean",
        "consistency": None,
    },
)
def make_entangle(
    nlp: Language,
    name: str,
    model: Model,
    frozen: bool,
    store_output: bool,
    inference: InferenceSetting,
    store_attention: bool,
    doc_tensor: Optional[Side] = None,
    doc_tensor_pooling: Pooling = "mean",
    consistency: Optional[NoiseConsistency] = None,
) -> "Entangle":
    """Construct the `entangle` component: the shared character + subword encoder, run once
    per batch, whose states every downstream EntangleListener (ner, tagger, textcat, ...)
    reads, as spacy-transformers' `transformer` component feeds its listeners. Returns the
    component, attached to ``nlp`` so that it finds its listeners.

    nlp (Language), name (str): the pipeline, and the component's name (what a listener's
        ``upstream`` names).
    model (Model[List[Doc], List[EntangleData]]): the encoder, usually
        ``spacy-entangle.EntangleModel.v1`` (the default: google/canine-s and roberta-base,
        2 co-attention modules per side).
    frozen (bool): true: predict under no-grad and never step the optimizer, so the
        encoder keeps its weights while the components after it train (a listener's
        grad_factor = 0 is not freezing). Default false. Like store_output, the config the
        pipeline is loaded with decides it, not the saved one.
    store_output (bool): true: keep the states in ``doc._.entangle`` (saved with the doc by
        Doc.to_bytes and DocBin(store_user_data=True)), so a listener can read a processed
        doc again (a component's ``pipe`` / ``predict`` after
        ``nlp.pipe(..., disable=[...])``); with several `entangle` components,
        ``doc._.entangle`` holds the last one's and ``doc._.entangle_others`` the others' by
        name. It then computes every side its listeners read, enabled or not. Default
        false: the listeners read the states without it, and bulk output never carries
        them.
    inference (str): how prediction runs (training is always exact; a run-time setting,
        not saved with the weights), one of
          "fp32": the exact model (the default);
          "auto": the device's default, for shipped pipelines: on a CPU the fastest mode
            that keeps fp32's accuracy (modeling/inference.py's AUTO_CPU_MODE,
            "onnx-mixed"; "int8" where onnxruntime is missing), on a GPU the model itself;
          "int8": dynamic int8 quantization of the Linear layers (CPU);
          "bf16": bfloat16 autocast;
          "onnx": ONNX Runtime, the same model in fp32 (CPU);
          "onnx-mixed": ONNX Runtime with int8's split: the pretrained encoders in fp32,
            the layers the model adds in int8 (CPU);
          "onnx-int8": ONNX Runtime's dynamic int8 of the encoders and co-attention (CPU;
            the fastest, at a cost in F1).
        Any other value is refused. The onnx modes' graphs are exported once and saved with
        the pipeline (``to_disk``; ``prepare_inference`` exports them before the first
        doc); without onnxruntime they predict in fp32 with a warning that names the
        override (inference = "fp32").
    store_attention (bool): true: ``doc._.entangle_attention`` keeps each co-attention
        module's cross-attention maps (``python -m spacy_entangle explain`` draws them),
        n_pieces x n_chars floats per module and direction; off (false) by default.
    doc_tensor (Optional[str]): "subword" | "char" | "both": fill ``doc.tensor`` with one
        vector per token from that side ("both": subword ‖ char), pooled by
        doc_tensor_pooling, so that ``token.vector``, ``span.vector`` and
        ``doc.similarity`` work; null (default): ``doc.tensor`` is left alone.
    doc_tensor_pooling (str): how doc_tensor pools a token's rows: "mean" (default) or
        "first" (its first piece / first character).
    consistency (Optional[NoiseConsistency]): null (default), or stability training while
        it trains (``spacy-entangle.noise_consistency.v1``: an attacked copy of some docs
        of each batch learns the clean docs' token states; noise/consistency.py).
    """
    component = Entangle(
        nlp.vocab,
        model,
        name,
        frozen=frozen,
        store_output=store_output,
        inference=inference,
        store_attention=store_attention,
        doc_tensor=doc_tensor,
        doc_tensor_pooling=doc_tensor_pooling,
        consistency=consistency,
    )
    component.attach(nlp)
    return component


class Entangle(ListenerLinks, TrainablePipe):
    """Hands its per-doc output to its listeners (and keeps it in ``doc._.entangle``
    with store_output = true)."""

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        name: str = "entangle",
        *,
        frozen: bool = False,
        store_output: bool = False,
        inference: str = "fp32",
        store_attention: bool = False,
        doc_tensor: Optional[str] = None,
        doc_tensor_pooling: str = "mean",
        consistency: Optional[NoiseConsistency] = None,
    ):
        self.vocab = vocab
        self.model = model
        # a run-time setting from the config, not saved with the weights (cfg is)
        self.inference = inference
        self.store_attention = store_attention
        # run-time settings too: which side's pooled token vectors fill doc.tensor (None: none)
        self.doc_tensor, self.doc_tensor_pooling = check_doc_tensor(doc_tensor, doc_tensor_pooling)
        self.name = name
        # training only: stability training against attacked copies (None: off)
        self.consistency = consistency
        self.cfg = {"frozen": frozen, "store_output": store_output}
        # the pipeline and the listeners linked (pipeline/linking.py)
        self._init_links()
        # prediction: each doc's output until its listeners have read it
        self._outputs = OutputStore(self)
        # training: the batch waiting for its backward pass, and its optimizer step
        self._deferred = DeferredBackward(model)
        install_extensions()

    @property
    def inference(self) -> str:
        """How prediction runs (the factory's ``inference``). Setting it on a loaded pipeline
        switches the mode from the next doc on, as loading with that override does."""
        return entangle_shim(self.model).inference if self.model.shims else self._inference

    @inference.setter
    def inference(self, mode: str) -> None:
        self._inference = check_inference_mode(mode)
        if self.model.shims:
            entangle_shim(self.model).set_inference(self._inference)

    @property
    def store_attention(self) -> bool:
        """Keep the co-attention maps of each prediction in ``doc._.entangle_attention``
        (per window: pieces, characters, their doc offsets and tokens, and per module the
        head-averaged weights subword -> char and char -> subword; see
        ``pipeline.attention.label_window``). A run-time setting: costs memory
        (n_pieces x n_chars floats per module and direction) and the fused attention."""
        return bool(self.model.shims and entangle_shim(self.model).store_attention)

    @store_attention.setter
    def store_attention(self, value: bool) -> None:
        if self.model.shims:
            entangle_shim(self.model).store_attention = bool(value)

    @property
    def frozen(self) -> bool:
        return bool(self.cfg.get("frozen"))

    def _update_sides(self, listeners: Optional[List[EntangleListener]] = None) -> None:
        """Compute only what is read: a side no listener reads skips its last module."""
        if listeners is None:
            listeners = self.listeners
        wanted = {s for listener in listeners for s in get_sides(listener)}
        if self.doc_tensor is not None:
            wanted.update(side_names(self.doc_tensor))
        set_sides(self.model, tuple(s for s in SIDES if s in wanted) or SIDES)
        set_keep_rows(self.model, self._kept_rows(listeners))

    def _kept_rows(self, listeners: List[EntangleListener]) -> str:
        """The rows a prediction keeps (layers/entangle_model.py): only what the listeners
        and doc_tensor read, unless the output is kept on the doc or a listener reads rows
        other than its tokens' (a first state, every character)."""
        if self.cfg.get("store_output") or self.store_attention or not listeners:
            return "all"
        reads: Set[str] = {get_rows(listener) for listener in listeners}
        if self.doc_tensor is not None:
            reads.add("first" if self.doc_tensor_pooling == "first" else "tokens")
        return next(keep for keep in ("all", "tokens", "first") if keep in reads or keep == "first")

    # -- prediction ----------------------------------------------------------------------
    def __call__(self, doc: Doc) -> Doc:
        self.set_annotations([doc], self.predict([doc]))
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        for batch in util.minibatch(stream, batch_size):
            batch = list(batch)
            self.set_annotations(batch, self.predict(batch))
            yield from batch

    def predict(self, docs: Iterable[Doc]) -> List[EntangleData]:
        docs = list(docs)
        # what store_output keeps is read later by any of its listeners, enabled now or not
        self._update_sides(self.all_listeners() if self.cfg.get("store_output") else self.active_listeners())
        if self.store_attention:
            long = [len(doc.text) for doc in docs if len(doc.text) > LONG_DOC_CHARS]
            if long:
                warnings.warn(
                    f"store_attention keeps n_pieces x n_chars weights per co-attention module and direction: "
                    f"{len(long)} doc(s) of up to {max(long):,} characters hold large maps (turn it off "
                    "for bulk processing)",
                    stacklevel=2,
                )
        return self.model.predict(docs)

    def set_annotations(self, docs: Iterable[Doc], outputs: List[EntangleData]) -> None:
        """Hand each doc's output to the listeners enabled now (dropped once they have
        all read it); keep it in ``doc._.entangle`` only with store_output = true; fill
        ``doc.tensor`` with doc_tensor's side."""
        docs = list(docs)
        if self.doc_tensor is not None:
            set_doc_tensors(docs, outputs, self.doc_tensor, self.doc_tensor_pooling)
        readers = self.active_listeners()
        store = bool(self.cfg.get("store_output"))
        times = Counter(id(doc) for doc in docs)  # the same Doc twice in a batch is read twice
        for doc, data in zip(docs, outputs):
            self.stamp(data)  # its name and model: listeners read only their own doc's states
            self._outputs.put(doc, data, readers, times[id(doc)])
            if store:
                keep_output(doc, data)
            if self.store_attention:
                doc._.entangle_attention = data.attention = self._labelled_attention(data, doc)

    def _labelled_attention(self, data: EntangleData, doc: Doc) -> Optional[List[Dict[str, Any]]]:
        """The doc's co-attention maps as the model kept them, labelled (pipeline/attention.py)."""
        if data.attention is None:
            return None
        subwords, chars = entangle_shim(self.model).built_specs()
        return label_attention(data.attention, doc, subwords, chars)

    def release(self, docs: Iterable[Doc]) -> None:
        """Drop the outputs of ``docs`` that its listeners have not read (yet)."""
        self._outputs.drop(docs)

    def prepare_inference(self, texts: Optional[Sequence[str]] = None) -> List[str]:
        """Make what the `inference` setting predicts with now, not on a user's first doc:
        the prediction copy and, in the onnx modes, the ONNX graphs (exported once; ``to_disk``
        saves them with the pipeline, so ``spacy.load`` reads them: the project's `package`
        step does this). ``texts`` (default: the package's fixed sample text) are predicted as
        the pipeline predicts, so the graphs made are those its listeners' reads need. Returns
        the graphs held, as MODE:PART/KEY."""
        from ..backbone_dirs.sample_text import sample_lines

        lines = list(texts) if texts is not None else sample_lines()
        self.predict([Doc(self.vocab, words=line.split() or ["."]) for line in lines])
        return entangle_shim(self.model).graph_names()

    # -- training ------------------------------------------------------------------------
    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Run the model once and hand its output to every listener; the last
        listener's backprop call runs the one backward pass (and the optimizer step,
        with ``sgd`` or the optimizer ``finish_update`` got before it). A batch whose
        last listener never reported (its component excluded, frozen or with nothing
        to learn) runs its backward pass at ``finish_update`` or at the next update."""
        validate_examples(examples, "Entangle.update")
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        docs = [eg.predicted for eg in examples]
        batch_id = EntangleListener.get_batch_id(docs)
        if self.frozen:
            outputs = self.predict(docs)
            for listener in self.active_listeners():
                listener.receive(batch_id, outputs, no_backprop)
            return losses
        self._run_backward(late=True)
        self.renew_states_id()  # the weights change: states computed before are another model's
        listeners = self.active_listeners()
        self._update_sides(listeners)
        set_dropout_rate(self.model, drop)
        outputs, bp_outputs = self._begin_update(docs, losses)
        pending = self._deferred.begin(outputs, bp_outputs, sgd)

        def accumulate_gradient(grads: List[EntangleData]) -> List[Doc]:
            losses[self.name] += pending.add(grads)
            return []

        def backprop(grads: List[EntangleData]) -> List[Doc]:
            accumulate_gradient(grads)
            if self._deferred.is_pending(pending):
                self._run_backward()
            return []

        for listener in listeners[:-1]:
            listener.receive(batch_id, outputs, accumulate_gradient)
        if listeners:
            listeners[-1].receive(batch_id, outputs, backprop)
        return losses

    def _begin_update(
        self, docs: List[Doc], losses: Dict[str, float]
    ) -> Tuple[List[EntangleData], Callable[[List[EntangleData]], Any]]:
        """The batch's forward pass; with ``consistency``, in the same pass the attacked
        copies of some docs, whose gradient towards the clean docs' states (computed now:
        the clean states are its fixed target) joins the listeners' in the one backward
        pass. The listeners see the clean docs' outputs only."""
        rule = self.consistency
        picked, copies = rule.perturb(docs) if rule is not None else ([], [])
        if rule is None or not copies:
            return self.model.begin_update(docs)
        key = f"{self.name}_consistency"
        losses.setdefault(key, 0.0)
        both, bp_both = self.model.begin_update(docs + copies)
        outputs = both[: len(docs)]
        loss, d_copies = rule.loss([outputs[i] for i in picked], both[len(docs) :], get_sides(self.model))
        losses[key] += loss

        def backprop(grads: List[EntangleData]) -> Any:
            return bp_both(list(grads) + d_copies)

        return outputs, backprop

    def finish_update(self, sgd: Optimizer) -> None:
        """One optimizer step per batch. ``nlp.update(sgd=...)`` finishes each
        component right after its own update, before any listener has reported:
        the step then waits for the backward pass. ``spacy train`` finishes after
        every update: a backward pass still pending (the last listener's component
        did not update) runs here with the gradients handed back so far."""
        if self.frozen or self._deferred.defer_step(sgd):
            return
        self._run_backward()
        self._deferred.step(sgd)

    def _run_backward(self, late: bool = False) -> None:
        """The pending batch's backward pass and step (``DeferredBackward.backward``),
        after freeing the listeners that never reported. late: the next batch's update
        runs it (its last listener never reported)."""
        pending = self._deferred.take()
        if pending is None:
            return
        silent = [
            name
            for name, listeners in self.listener_map.items()
            if any(listener.holds(pending.outputs) for listener in listeners)
        ]
        for listener in self.listeners:
            if listener.holds(pending.outputs):
                listener.clear()  # a listener that never reported: free the graph
        if late and pending.sgd is not None and pending.has_grads and silent:
            warnings.warn(
                f"nlp.update(sgd=...) with {', '.join(silent)} in `exclude`: the `{self.name}` component's "
                "backward pass and optimizer step waited for that listener (its graph stayed in memory) and "
                f"ran at the next update. Disable the component instead (with nlp.select_pipes(disable="
                f"{silent!r}): ...), or call nlp.update(sgd=False) and then finish_update(sgd) on each "
                "component, as spacy train does.",
                stacklevel=3,
            )
        self._deferred.backward(pending)

    def get_loss(self, examples: Iterable[Example], scores: Any) -> Tuple[float, None]:  # pragma: no cover - no loss
        return 0.0, None

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *, nlp: Optional[Language] = None) -> None:
        """Load both backbones (by name or local path), check and size the listeners; warn
        about a training budget that cannot reach its peak learning rate or its first scored
        evaluation (training/budget.py)."""
        self.model.initialize()
        self.renew_states_id()
        if nlp is not None:
            self.link_listeners(nlp)
            for problem in config_budget_problems(nlp.config):
                warnings.warn(f"spacy-entangle: {problem}", UserWarning, stacklevel=2)
        width = self.model.get_dim("nO")
        for listener in self.listeners:
            listener.set_dim("nO", width, force=True)

    # -- serialisation ---------------------------------------------------------------------
    def _finish_pending(self) -> None:
        """Before saving: the step of an nlp.update(sgd=...) batch still waiting."""
        if self._deferred.step_waits:
            self._run_backward()

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        self._finish_pending()
        return super().to_bytes(exclude=exclude)

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> None:
        self._finish_pending()
        serialize = {
            "cfg": lambda p: srsly.write_json(p, self.cfg),
            "vocab": lambda p: self.vocab.to_disk(p, exclude=exclude),
            "model": lambda p: self.model.to_disk(p),
        }
        util.to_disk(path, serialize, exclude)

    def _load_cfg(self, saved: Dict[str, Any]) -> None:
        """The saved cfg, except the run-time settings: those of the config this component
        was built from win (spacy.load's config overrides; a pipeline saved with
        store_output = true has it in its config.cfg too)."""
        self.cfg.update({key: value for key, value in saved.items() if key not in RUNTIME_CFG})
        if "states_id" not in saved:  # saved before weights had an id: these weights get a new one
            self.renew_states_id()

    def _load_model(self, data: bytes, where: str) -> None:
        """model.from_bytes, with any failure naming this component and its file. Intact
        files the installed libraries cannot read are not called damaged: the error names
        the versions and the fix (IncompatibleFilesError, from the shim)."""
        from ..versions import IncompatibleFilesError

        try:
            self.model.from_bytes(data)
        except IncompatibleFilesError as err:
            raise IncompatibleFilesError(f"Cannot load the `{self.name}` component from {where}: {err}") from err
        except Exception as err:  # re-raised naming the component
            raise ValueError(
                f"Cannot load the `{self.name}` component from {where} (damaged, truncated, or not "
                f"saved by spacy-entangle): {err}"
            ) from err

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "Entangle":
        deserialize = {
            "cfg": lambda b: self._load_cfg(srsly.json_loads(b)),
            "vocab": lambda b: self.vocab.from_bytes(b, exclude=exclude),
            "model": lambda b: self._load_model(b, "bytes (nlp.from_bytes)"),
        }
        util.from_bytes(bytes_data, deserialize, exclude)
        return self

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "Entangle":
        def load_model(p: Path) -> None:
            with Path(p).open("rb") as file_:
                self._load_model(file_.read(), str(p))

        deserialize: Dict[str, Callable[[Path], Any]] = {
            "cfg": lambda p: self._load_cfg(srsly.read_json(p)),
            "vocab": lambda p: self.vocab.from_disk(p, exclude=exclude),
            "model": load_model,
        }
        util.from_disk(path, deserialize, exclude)
        return self
