"""to_disk/from_disk/to_bytes/from_bytes shared by the three components.

A component's state is its settings (``self.cfg``, JSON) and its model (an
`AdaptorGrammar` or a `TopicModel`, or None before fitting). On disk::

    <component>/cfg      the settings, with the kind, a version and whether it is fitted
    <component>/model/   the model archive (`spacy_ag.archive`)

``exclude`` takes "cfg" and "model", as spaCy passes it. The settings the
component was built with (its config) win over the saved ``cfg``, which is
checked for its kind and version. spaCy calls ``from_disk`` with a part's
folder whether or not it was saved, so a missing folder or ``cfg``, or a
``cfg`` that says "fitted" without a model directory, is an incomplete
pipeline and refused (E194) instead of leaving the component unfitted.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterable, List, Tuple, Union

import srsly
from spacy import util

from ..errors import Errors, ModelFileError

__all__ = ["CFG_VERSION", "ModelSerializer", "check_saved_pipeline", "saved_components"]

CFG_VERSION = 1


def _check_cfg(cfg: Any, source: str, kind: str) -> Dict[str, Any]:
    if not isinstance(cfg, dict) or cfg.get("kind") != kind:
        raise ModelFileError(Errors.E077.format(source=source, kind=kind))
    if cfg.get("cfg_version") != CFG_VERSION:
        raise ModelFileError(Errors.E078.format(source=source, found=cfg.get('cfg_version'), expected=CFG_VERSION))
    return cfg


def saved_components(pipeline: Union[str, Path]) -> List[Tuple[str, str, Path]]:
    """``(name, kind, model directory)`` of every fitted spacy-ag component saved in a pipeline directory
    (``model-last`` of a pipeline run: ``tokenizer/`` for the segmenter, ``<name>/`` for a component),
    by name; kind is "segmenter", "parser" or "topics". Reads only the settings files."""
    found = []
    for cfg_file in sorted(Path(pipeline).glob("*/cfg")) if Path(pipeline).is_dir() else []:
        model_dir = cfg_file.parent / "model"
        if not model_dir.is_dir():
            continue
        try:
            cfg = srsly.read_json(cfg_file)
        except ValueError:
            continue  # not a spacy-ag component's settings (loading the pipeline would say why)
        if isinstance(cfg, dict) and isinstance(cfg.get("kind"), str):
            found.append((cfg_file.parent.name, cfg["kind"], model_dir))
    return found


#: What spaCy saves of a pipeline's spacy-ag parts: the tokenizer's registered name and the factories.
SEGMENTER_TOKENIZER = "spacy-ag.Segmenter.v1"
MODEL_FACTORIES = ("ag_parser", "ag_topics")


def check_saved_pipeline(pipeline: Union[str, Path]) -> None:
    """Refuse (`ModelFileError`, E194) a pipeline directory whose config lists a spacy-ag part (the
    segmenter tokenizer, an ag_parser or ag_topics component) that is not saved there whole: its
    folder, its settings file, and its model directory when the settings say it is fitted."""
    pipeline = Path(pipeline)
    config_file = pipeline / "config.cfg"
    if not config_file.is_file():
        return
    try:
        config = util.load_config(config_file, interpolate=False)
        nlp_section = config.get("nlp", {})
        parts = ["tokenizer"] if nlp_section.get("tokenizer", {}).get("@tokenizers") == SEGMENTER_TOKENIZER else []
        parts += [name for name in nlp_section.get("pipeline", [])
                  if config.get("components", {}).get(name, {}).get("factory") in MODEL_FACTORIES]
    except Exception:  # not a config spaCy can read: loading the pipeline says why
        return
    for name in parts:
        folder, what = pipeline / name, "the tokenizer's folder" if name == "tokenizer" else f"the folder of {name}"
        if not folder.is_dir():
            raise ModelFileError(Errors.E194.format(path=folder, part=what, pipeline=pipeline))
        if not (folder / "cfg").is_file():
            raise ModelFileError(Errors.E194.format(path=folder / "cfg", part="the settings file", pipeline=pipeline))
        try:
            fitted = srsly.read_json(folder / "cfg").get("fitted")
        except (ValueError, AttributeError):
            continue  # loading the pipeline says what is wrong with it
        if fitted and not (folder / "model").is_dir():
            raise ModelFileError(Errors.E194.format(path=folder / "model", part="the model directory",
                                                    pipeline=pipeline))


class ModelSerializer:
    """Mixin: the four serialization methods of a component with ``cfg`` and ``model``.

    Subclasses set `kind`, and `_model_class` where the model is not an
    `AdaptorGrammar`; `_set_model` may check the model.
    """

    kind = "component"
    model: Any = None
    cfg: Dict[str, Any]

    def _model_class(self):
        """The class of `model`, imported when needed: spaCy imports the components at start-up."""
        from ..model import AdaptorGrammar

        return AdaptorGrammar

    def _set_model(self, model) -> None:
        self.model = model

    def _cfg_out(self) -> Dict[str, Any]:
        from ..about import __version__

        return {"kind": self.kind, "cfg_version": CFG_VERSION, "spacy_ag_version": __version__,
                "fitted": self.model is not None, **self.cfg}

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> None:
        """Save to a directory.

        path (str / Path): The directory (created if needed).
        exclude (Iterable[str]): "cfg" and/or "model" to leave out.
        """
        def write_model(p: Path) -> None:
            if self.model is not None:
                self.model.save(p)

        util.to_disk(util.ensure_path(path), {"cfg": lambda p: srsly.write_json(p, self._cfg_out()),
                                              "model": write_model}, exclude)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()):
        """Load from a directory written by `to_disk`.

        RETURNS: The component, with the saved model (if any).
        """
        path = util.ensure_path(path)
        saved: Dict[str, Any] = {}
        # spaCy calls this with the part's folder whether or not it was saved: a missing one would
        # leave the component unfitted (a segmenter then splits text into single characters)
        if not path.is_dir() and not {"cfg", "model"} <= set(exclude):
            raise ModelFileError(Errors.E194.format(path=path, part=f"the {self.kind}'s folder",
                                                    pipeline=path.parent))

        def read_cfg(p: Path) -> None:
            if not p.exists():
                raise ModelFileError(Errors.E194.format(path=p, part="the settings file", pipeline=path.parent))
            try:
                cfg = srsly.read_json(p)
            except ValueError as err:
                raise ModelFileError(Errors.E196.format(p=p, err=err)) from None
            saved.update(_check_cfg(cfg, str(p), self.kind))

        def read_model(p: Path) -> None:
            if p.exists():
                self._set_model(self._model_class().load(p))
            elif saved.get("fitted"):
                raise ModelFileError(Errors.E194.format(path=p, part="the model directory", pipeline=path.parent))

        util.from_disk(path, {"cfg": read_cfg, "model": read_model}, exclude)
        return self

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        """Serialize to bytes (msgpack with "cfg" and "model" keys).

        RETURNS (bytes): The serialized component.
        """
        return util.to_bytes({"cfg": lambda: srsly.json_dumps(self._cfg_out(), sort_keys=True),
                              "model": lambda: self.model.to_bytes() if self.model is not None else b""},
                             exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()):
        """Load from bytes produced by `to_bytes`.

        RETURNS: The component.
        """
        source = f"<{self.kind} bytes>"
        try:
            srsly.msgpack_loads(bytes_data)
        except ValueError as err:
            raise ModelFileError(Errors.E079.format(source=source, err=err)) from None

        def read_cfg(data: bytes) -> None:
            try:
                cfg = srsly.json_loads(data)
            except ValueError as err:
                raise ModelFileError(Errors.E197.format(source=source, err=err)) from None
            _check_cfg(cfg, source, self.kind)

        util.from_bytes(bytes_data, {"cfg": read_cfg,
                                     "model": lambda b: self._set_model(self._model_class().from_bytes(b, source)
                                                                        if b else None)}, exclude)
        return self
