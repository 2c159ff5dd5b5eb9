"""Which listeners an `entangle` component feeds: the one owner of its listener links.

spaCy links listeners once (load, add_pipe, initialize), among the components enabled
then, through ``find_listeners`` / ``add_listener`` / ``remove_listener`` /
``listener_map``; ``disable_pipe`` / ``enable_pipe`` / ``select_pipes`` later change which
of them run. :class:`ListenerLinks` keeps those links and answers, at each batch, which
listeners read the output now (and how many readers each doc's output waits for)."""

import hashlib
import uuid
import weakref
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc
from thinc.api import Model

from ..data import EntangleData, keep_output
from ..layers.listener import EntangleListener, OutputStore


class _PipelineRef:
    """A weak reference to the pipeline a component belongs to, left behind by pickle
    and deepcopy (a component must not keep its pipeline alive, nor ship it)."""

    def __init__(self, nlp: Optional[Language] = None):
        self._ref = weakref.ref(nlp) if nlp is not None else None

    def __call__(self) -> Optional[Language]:
        return self._ref() if self._ref is not None else None

    def __reduce__(self) -> Tuple[type, tuple]:
        return (_PipelineRef, ())


def check_listeners(nlp: Language) -> None:
    """Refuse every EntangleListener in the pipeline whose upstream is not an
    `entangle` component before it (it would train on zeros, then fail to predict),
    or is "*" with several before it (which one it reads would be a guess)."""
    names = nlp.component_names
    for position, (name, proc) in enumerate(nlp.components):
        model = getattr(proc, "model", None)
        if not isinstance(model, Model):
            continue
        for node in model.walk():
            if isinstance(node, EntangleListener):
                _check_upstream(nlp, names[:position], name, node.upstream_name)


def _check_upstream(nlp: Language, before: List[str], name: str, upstream: str) -> None:
    where = f"Component '{name}' listens to upstream = {upstream!r}"
    if upstream == "*":
        found = [n for n in before if isinstance(nlp.get_pipe(n), ListenerLinks)]
        if not found:
            raise ValueError(f"{where}, but no `entangle` component comes before it in the pipeline.")
        if len(found) > 1:
            raise ValueError(
                f"{where}, but {len(found)} `entangle` components come before it ({', '.join(found)}): "
                "set its upstream to the one it reads."
            )
        return
    if upstream not in nlp.component_names:
        raise ValueError(
            f"{where}, but the pipeline has no component named {upstream!r} "
            f"(components: {', '.join(nlp.component_names)})."
        )
    if not isinstance(nlp.get_pipe(upstream), ListenerLinks):
        raise ValueError(f"{where}, which is a {type(nlp.get_pipe(upstream)).__name__}, not an `entangle` component.")
    if upstream not in before:
        raise ValueError(f"{where}, which comes after it in the pipeline: put {upstream!r} before {name!r}.")


class ListenerLinks:
    """The listener side of the `entangle` component (a base class: spaCy calls these
    methods on the component). The component provides ``name``, ``model``, ``cfg``, its
    :class:`OutputStore` ``_outputs``, ``_update_sides`` (which sides to compute) and
    ``predict``.

    What the listeners read is tied to the model that computed it: ``cfg["states_id"]``
    names the component's weights (new when they are built or updated, saved with them, so a
    pipeline loaded twice, or a DocBin read back beside it, agrees with itself), and
    ``made_by`` adds the window settings; ``stamp`` writes it on each output."""

    name: str
    model: Model
    cfg: Dict[str, Any]
    _outputs: OutputStore
    _listener_map: Dict[str, List[EntangleListener]]
    _disabled_at_link: frozenset
    _pipeline: _PipelineRef

    def _init_links(self) -> None:
        """No pipeline and no listener yet (the factory attaches, spaCy links); new weights."""
        self._pipeline = _PipelineRef()
        self.listener_map = {}
        self.renew_states_id()

    def _update_sides(self, listeners: Optional[List[EntangleListener]] = None) -> None:
        raise NotImplementedError

    def predict(self, docs: Any) -> List[EntangleData]:
        raise NotImplementedError

    # -- which model made the states ----------------------------------------------------
    def renew_states_id(self) -> None:
        """The weights changed (built, initialized, updated, or loaded without an id): states
        computed before are another model's."""
        self.cfg["states_id"] = uuid.uuid4().hex

    @property
    def made_by(self) -> str:
        """The identity of what this component computes now: its weights and its window
        settings (both change the states of a doc)."""
        windows = repr(self.model.attrs.get("window_settings"))
        return f"{self.cfg['states_id']}/{hashlib.blake2b(windows.encode('utf8'), digest_size=4).hexdigest()}"

    def stamp(self, data: EntangleData) -> None:
        """Mark an output as this component's (its name and ``made_by``)."""
        data.source = self.name
        data.made_by = self.made_by

    @property
    def can_restate(self) -> bool:
        """Whether this component may recompute a listener's states: it is in the pipeline it
        was attached to (or attached to none), not removed from it."""
        nlp = self._pipeline()
        return nlp is None or any(proc is self for _, proc in nlp.components)

    def restate(self, docs: List[Doc]) -> List[EntangleData]:
        """States of ``docs`` as they are now, for a listener whose states were not theirs
        (retokenized since, or another model's): predicted and stamped, kept on the doc with
        store_output = true, and handed to the listeners still waiting for the doc."""
        outputs = self.predict(docs)
        for doc, data in zip(docs, outputs):
            self.stamp(data)
            if self.cfg.get("store_output"):
                keep_output(doc, data)
            self._outputs.refresh(doc, data)
        return outputs

    def attach(self, nlp: Language) -> None:
        """Remember (weakly) the pipeline this component runs in: the factory and
        ``initialize`` call it."""
        self._pipeline = _PipelineRef(nlp)
        self._disabled_at_link = frozenset(nlp.disabled)

    @property
    def listener_map(self) -> Dict[str, List[EntangleListener]]:
        return self._listener_map

    @listener_map.setter
    def listener_map(self, value: Dict[str, List[EntangleListener]]) -> None:
        """spaCy resets it when it links the listeners (load, add_pipe, initialize), and
        links only the enabled components: note which ones were disabled then."""
        self._listener_map = value
        nlp = self._pipeline()
        self._disabled_at_link = frozenset(nlp.disabled) if nlp is not None else frozenset()

    @property
    def listeners(self) -> List[EntangleListener]:
        return [m for c in self.listening_components for m in self.listener_map[c]]

    @property
    def listening_components(self) -> List[str]:
        return list(self.listener_map.keys())

    def add_listener(self, listener: EntangleListener, component_name: str) -> None:
        self.listener_map.setdefault(component_name, [])
        if listener not in self.listener_map[component_name]:
            self.listener_map[component_name].append(listener)
        if self.model.has_dim("nO") and listener.has_dim("nO") is None:
            listener.set_dim("nO", self.model.get_dim("nO"))
        listener.connect(self.name, self._outputs, self._pipeline)
        self._update_sides()

    def remove_listener(self, listener: EntangleListener, component_name: str) -> bool:
        if listener in self.listener_map.get(component_name, []):
            self.listener_map[component_name].remove(listener)
            if not self.listener_map[component_name]:
                del self.listener_map[component_name]
            listener.connect(None)
            self._update_sides()
            return True
        return False

    def find_listeners(self, component: Any) -> None:
        names = ("*", self.name)
        if isinstance(getattr(component, "model", None), Model):
            for node in component.model.walk():
                if isinstance(node, EntangleListener) and node.upstream_name in names:
                    self.add_listener(node, component.name)

    def link_listeners(self, nlp: Language) -> None:
        """``initialize``: check every listener's upstream, then link those of the
        components after this one."""
        self.attach(nlp)
        check_listeners(nlp)
        after = False
        for _, proc in nlp.pipeline:
            if after:
                self.find_listeners(proc)
            after = after or proc is self

    def active_listeners(self) -> List[EntangleListener]:
        """The listeners that read this component's output now: those of the components
        enabled now after it (the ones found here are linked). A component sourced into
        another pipeline keeps the listeners linked there."""
        self._outputs.bind(self)  # a store unpickled (spawned workers) knows its component again
        found = self._found_in(enabled_only=True)
        if found is None:
            return [ls for ls in self.listeners if ls.connected_to == self.name]
        for name, node in found:
            if node not in self.listener_map.get(name, []) or node._store is not self._outputs:
                self.add_listener(node, name)
        return [node for _, node in found]

    def all_listeners(self) -> List[EntangleListener]:
        """The listeners of this component, enabled now or not: what store_output keeps
        on the doc is read later by any of them."""
        found = self._found_in(enabled_only=False)
        nodes = [node for _, node in found] if found is not None else []
        return nodes + [ls for ls in self.listeners if ls not in nodes]

    def _found_in(self, enabled_only: bool) -> Optional[List[Tuple[str, EntangleListener]]]:
        """(component, listener) of this component in the pipeline it is attached to
        (its enabled components or all), or None when that is not ours to judge: no
        pipeline, this component is not in it (or disabled, with enabled_only), or a
        listener there that spaCy left unlinked while its component was enabled (this
        component was last linked in another pipeline: sourced)."""
        nlp = self._pipeline()
        if nlp is None:
            return None
        components = nlp.pipeline if enabled_only else nlp.components
        if not any(proc is self for _, proc in components):
            return None
        found = list(self._listeners_in(components))
        unlinked = {name for name, node in found if node not in self.listener_map.get(name, [])}
        return None if unlinked - self._disabled_at_link else found

    def _listeners_in(self, components: Sequence[Tuple[str, object]]) -> Iterator[Tuple[str, EntangleListener]]:
        """(component, listener) of this component among ``components`` after it ("*":
        the nearest `entangle` component before the listener)."""
        nearest: Optional[ListenerLinks] = None
        after_self = False
        for name, proc in components:
            if isinstance(proc, ListenerLinks):
                nearest, after_self = proc, after_self or proc is self
                continue
            model = getattr(proc, "model", None)
            if not after_self or not isinstance(model, Model):
                continue
            for node in model.walk():
                if isinstance(node, EntangleListener) and (
                    node.upstream_name == self.name or (node.upstream_name == "*" and nearest is self)
                ):
                    yield name, node
