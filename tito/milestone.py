"""`tito milestone run gpt`: the capstone. Train a small GPT, built only from the student's own `tinytorch`,
on a text file; show a progress bar, evaluate now and then, checkpoint, plot the loss and print a sample.

    tito milestone run gpt                                  # Python's standard-library sources, nanoGPT's CPU size
    tito milestone run gpt --text input.txt --steps 5000 --out runs/shakespeare
    tito milestone run gpt --resume                         # continue the run in --out from its checkpoint

Ctrl-C (or `--stop-at N`) finishes the current step, writes a checkpoint and the loss curve and stops; the sample is
written only when the run reaches its last step. `--resume` continues with the same step count, optimizer state and
random-number state, so an interrupted run ends exactly where an uninterrupted one would.

The run uses the fast path (the kernels of modules 07 and 08, `tinytorch.perf.enable()`) when module 08 is complete, else the
plain textbook ops of modules 01-06; `--fast` / `--plain` decide instead, and the first line printed says which.
Each step is the library's own `tinytorch.core.train.train_step` (module 04), the one the benchmarks time.
The library is imported inside the command, so `tito` itself starts even before module 06 is complete.
"""
from __future__ import annotations

import hashlib
import math
import signal
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Optional

import numpy as np

from tito import output, progress
from tito.output import one_line
from tito.workspace import TitoError, Workspace

MILESTONES = ("gpt",)
CHECKPOINT, LOSS_PLOT, SAMPLE = "ckpt.npz", "loss.png", "sample.txt"
PERF, PERF_MODULE = "tinytorch.perf", "08"  # the fast kernels' switch, and the module that exports it
# Module 08 exports the switch (tinytorch/perf/__init__.py) and this file beside it; before module 08, tinytorch.perf
# holds module 07's parts only, under an empty __init__.py.
SWITCH_BESIDE = "compiled_kernels.py"


@dataclass
class RunConfig:
    "Everything that defines a run; saved in the checkpoint so `--resume` continues the same run."
    text: Optional[str] = None  # None: Python's standard-library sources
    max_chars: Optional[int] = None
    steps: int = 2000
    batch_size: int = 12
    block_size: int = 64
    embed_dim: int = 128
    num_layers: int = 4
    num_heads: int = 4
    dropout: float = 0.0
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup: int = 100
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    eval_interval: int = 250
    eval_iters: int = 20
    sample_tokens: int = 500
    temperature: float = 0.8
    top_k: Optional[int] = None
    seed: int = 0


# --- the pieces of a run -----------------------------------------------------------------------------------------
def _library():
    "The student's library, imported on first use (a clear error if module 06 is not exported yet)."
    try:
        from tinytorch.core import layers, optim, train, transformer
    except ImportError as e:
        raise TitoError(f"the GPT milestone needs modules 03-06 exported into tinytorch ({e}); "
                        "complete them first (tito module complete NN)") from None
    return transformer, train, optim, layers


# --- the fast path or the plain one ------------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelPath:
    "Which ops a run uses (the fast kernels of modules 07 and 08, or the plain ops of modules 01-06) and why."
    fast: bool
    reason: str

    def __str__(self) -> str:
        return f"{'fast' if self.fast else 'plain'} path: {self.reason}"


def perf_spec():
    """Where tinytorch.perf would be imported from once module 08 has exported its switch there; None before (or when
    tinytorch is missing). Found without importing it: a student's code runs only when the path is taken."""
    try:
        spec = find_spec(PERF)
    except ModuleNotFoundError:
        return None
    if spec is None or spec.origin is None or not (Path(spec.origin).parent / SWITCH_BESIDE).is_file():
        return None
    return spec


def choose_path(force: Optional[bool] = None) -> KernelPath:
    """The fast path when module 08 is complete: its switch is exported into `tinytorch.perf` and, if the package is
    a student workspace's, `tito module complete 08` passed there. `force` (--fast True, --plain False) decides instead."""
    plain = "the plain ops of modules 01-06"
    if force is False:
        return KernelPath(False, f"{plain} (--plain)")
    spec = perf_spec()
    if spec is None:
        if force:
            raise TitoError(f"--fast needs module {PERF_MODULE}: {PERF}'s switch is not exported "
                            f"(tito module complete {PERF_MODULE})")
        return KernelPath(False, f"{plain}; module {PERF_MODULE} is not exported (no {PERF}.enable)")
    ws = Workspace.containing(spec.origin)
    if (ws is not None and Path(spec.origin).resolve().is_relative_to(ws.lib_dir.resolve())
            and ws.is_student and not progress.is_complete(ws, PERF_MODULE)):
        if force:
            return KernelPath(True, f"the fast kernels (--fast; module {PERF_MODULE} is not complete)")
        return KernelPath(False, f"{plain}; module {PERF_MODULE} is not complete yet "
                                 f"(tito module complete {PERF_MODULE}, or --fast)")
    return KernelPath(True, f"the fast kernels of modules 07 and {PERF_MODULE}, {PERF}.enable()"
                            + (" (--fast)" if force else "; --plain runs the plain ops"))


def _perf():
    "tinytorch.perf, imported; a TitoError when the exported module does not import."
    try:
        import tinytorch.perf as perf
    except Exception as e:  # the student's own code: any error, reported on one line
        raise TitoError(f"{PERF} (module {PERF_MODULE}) does not import: {one_line(f'{type(e).__name__}: {e}')}; "
                        "fix it, or run with --plain") from None
    return perf


@contextmanager
def kernel_path(fast: bool):
    "The fast kernels on (`fast`) or off inside the `with` block, as they were after it."
    perf = _perf() if fast else sys.modules.get(PERF)  # never imported: the kernels cannot be on
    if perf is None or perf.is_enabled() == fast:
        if fast:
            perf.warm_up()
        yield
        return
    switch, restore = (perf.enable, perf.disable) if fast else (perf.disable, perf.enable)
    switch()
    try:
        if fast:
            perf.warm_up()  # the compiled loops get ready now (compiled, or loaded from disk), not in a timed step
        yield
    finally:
        restore()


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def read_text(cfg: RunConfig) -> str:
    "The training text: the UTF-8 file --text (its first --max-chars characters), else Python's standard library."
    if cfg.max_chars is not None and cfg.max_chars < 1:
        raise TitoError(f"--max-chars must be at least 1 (the number of characters to train on), not {cfg.max_chars}")
    if cfg.text is None:
        return _library()[0].stdlib_text(cfg.max_chars or 1_000_000)
    path = Path(cfg.text)
    if not path.exists():
        raise TitoError(f"--text {cfg.text}: no such file")
    if not path.is_file():
        raise TitoError(f"--text {cfg.text} is not a file")
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise TitoError(f"--text {cfg.text} cannot be read: {e.strerror or e}") from None
    if not raw:
        raise TitoError(f"--text {cfg.text} is empty")
    if raw.startswith(UTF16_BOMS):
        raise TitoError(f"--text {cfg.text} is UTF-16 text; save it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise TitoError(f"--text {cfg.text} is not UTF-8 text (byte {raw[e.start]:#04x} at offset {e.start}); "
                        "is it a binary file?") from None
    if "\x00" in text:
        raise TitoError(f"--text {cfg.text} is not text: it contains NUL characters (a binary file?)")
    return text[:cfg.max_chars] if cfg.max_chars else text


def text_hash(text: str) -> str:
    "SHA-256 of the training text (stored in the checkpoint, so --resume knows it trains on the same text)."
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def prepare_data(cfg: RunConfig, chars: Optional[list] = None, text: Optional[str] = None):
    "(tokenizer, train ids, validation ids): the first 90% of the text trains, the last 10% validates."
    transformer = _library()[0]
    text = read_text(cfg) if text is None else text
    tokenizer = transformer.CharTokenizer(text if chars is None else "".join(chars))
    try:
        ids = np.array(tokenizer.encode(text), dtype=np.int64)
    except ValueError as e:
        raise TitoError(f"the text changed since the checkpoint was written: {e}") from None
    split = int(0.9 * len(ids))
    if min(split, len(ids) - split) <= cfg.block_size:
        raise TitoError(f"the text has {len(ids)} characters: too short for --block-size {cfg.block_size} "
                        "(each split needs more than one block)")
    return tokenizer, ids[:split], ids[split:]


def build_model(cfg: RunConfig, vocab_size: int):
    "The GPT and its AdamW optimizer."
    transformer, _, optim, layers = _library()
    layers.manual_seed(cfg.seed)  # the generator that layer construction and dropout draw from
    try:
        model = transformer.GPT(vocab_size, cfg.embed_dim, cfg.num_layers, cfg.num_heads, cfg.block_size,
                                dropout=cfg.dropout, seed=cfg.seed)
        optimizer = optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    except ValueError as e:  # an impossible configuration, e.g. a width the heads do not divide
        raise TitoError(str(e)) from None
    return model, optimizer


def learning_rate(cfg: RunConfig, step: int) -> float:
    "Linear warmup to `lr`, then cosine decay to `min_lr` at the last step (module 04's schedule)."
    return _library()[2].lr_at(step, cfg.lr, cfg.warmup, cfg.steps, cfg.min_lr)


def plot_losses(history: dict, path: Path, title: str):
    "Training loss (each step, and smoothed) and validation loss against the step, as a PNG."
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    steps, train = np.array(history["step"]), np.array(history["loss"])
    fig, ax = plt.subplots(figsize=(7, 4))
    if len(train):
        ax.plot(steps, train, color="tab:blue", alpha=0.25, lw=0.8, label="train (each step)")
        window = max(1, min(50, len(train) // 10))
        smooth = np.convolve(train, np.ones(window) / window, mode="valid")
        ax.plot(steps[window - 1:], smooth, color="tab:blue", label=f"train (mean of {window})")
    if history["eval_step"]:
        ax.plot(history["eval_step"], history["val_loss"], "o-", color="tab:orange", label="validation")
    ax.set(xlabel="step", ylabel="cross-entropy (nats per character)", title=title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


class StopRequest:
    "SIGINT handler: the first Ctrl-C asks the loop to stop after the current step; a second one stops at once."

    def __init__(self):
        self.requested = False

    def __enter__(self):
        self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *exc):
        signal.signal(signal.SIGINT, self.previous)


def _progress():
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
    return output.progress(TextColumn("[bold]training"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("loss {task.fields[loss]:.3f}  {task.fields[tps]:,.0f} tok/s"),
                    TimeRemainingColumn())


# --- the run -----------------------------------------------------------------------------------------------------
@dataclass
class Run:
    "A run in progress: configuration, data, model, optimizer, random numbers, step and loss history."
    cfg: RunConfig
    out: Path
    tokenizer: object
    train_ids: np.ndarray
    val_ids: np.ndarray
    model: object
    optimizer: object
    rng: np.random.Generator
    step: int = 0
    history: dict = field(default_factory=lambda: {"step": [], "loss": [], "eval_step": [], "train_loss": [],
                                                   "val_loss": []})
    text_sha256: str = ""

    @property
    def checkpoint(self) -> Path:
        return self.out / CHECKPOINT


def new_run(cfg: RunConfig, out: Path) -> Run:
    text = read_text(cfg)
    tokenizer, train_ids, val_ids = prepare_data(cfg, text=text)
    model, optimizer = build_model(cfg, tokenizer.vocab_size)
    return Run(cfg, out, tokenizer, train_ids, val_ids, model, optimizer, np.random.default_rng(cfg.seed),
               text_sha256=text_hash(text))


def check_out(out: Path):
    "--out must be a folder, or a path where one can be made."
    if out.exists() and not out.is_dir():
        raise TitoError(f"--out {out} is a file; give a folder for the checkpoint, loss curve and sample")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise TitoError(f"--out {out}: {parent} is a file, not a folder")
            break


def _checkpoint_meta(path: Path, model=None, optimizer=None) -> dict:
    "The checkpoint's metadata (and its weights into `model` and `optimizer`); one line if it cannot be read."
    transformer = _library()[0]
    try:
        meta = transformer.load_checkpoint(path, model, optimizer)
        RunConfig(**meta["config"])
        if missing := [k for k in ("chars", "step", "history", "rng_state", "dropout_rng_state") if k not in meta]:
            raise KeyError(missing[0])
    except Exception as e:  # a damaged or foreign file fails in numpy, zipfile, json or the model: all one line
        raise TitoError(f"--resume: {path} is damaged or not a checkpoint of `tito milestone run gpt` "
                        f"({type(e).__name__}); start a new run with another --out, or delete it") from None
    return meta


def saved_run(out: Path) -> tuple[RunConfig, dict, str]:
    """(configuration, metadata, text) of the run saved in `out`, after checking that the text is the one it was
    trained on (the checkpoint stores its SHA-256)."""
    path = out / CHECKPOINT
    if not path.is_file():
        raise TitoError(f"--resume: no checkpoint at {path}; start a run without --resume first")
    meta = _checkpoint_meta(path)
    saved = RunConfig(**meta["config"])
    text = read_text(saved)
    stored = meta.get("text_sha256")
    if stored and stored != text_hash(text):
        what = f"--text {saved.text}" if saved.text else "Python's standard-library sources"
        raise TitoError(f"--resume: the text is not the one this run was trained on ({what} changed since the "
                        f"checkpoint; its SHA-256 differs); restore it, or start a new run with another --out")
    return saved, meta, text


def resumed_run(out: Path, cfg: RunConfig, given: frozenset) -> Run:
    "The run saved in `out`, exactly as it was: the saved configuration wins over the command line."
    layers = _library()[3]
    path = out / CHECKPOINT
    saved, meta, text = saved_run(out)
    ignored = sorted("--" + name.replace("_", "-") for name in given if getattr(saved, name) != getattr(cfg, name))
    if ignored:
        output.say(f"--resume continues the saved run; ignoring {', '.join(ignored)}", "yellow")
    if not meta.get("text_sha256"):
        output.say("this checkpoint predates text hashes: cannot check that the text is the same one", "yellow")
    tokenizer, train_ids, val_ids = prepare_data(saved, meta["chars"], text)
    model, optimizer = build_model(saved, tokenizer.vocab_size)
    meta = _checkpoint_meta(path, model, optimizer)
    rng = np.random.default_rng()
    rng.bit_generator.state = meta["rng_state"]
    layers.get_rng().bit_generator.state = meta["dropout_rng_state"]
    output.say(f"resuming from {path} at step {meta['step']} of {saved.steps}")
    return Run(saved, out, tokenizer, train_ids, val_ids, model, optimizer, rng, meta["step"], meta["history"],
               text_hash(text))


def evaluate_and_save(run: Run):
    "Estimate the train and validation losses, record them, and write the checkpoint."
    transformer, _, _, layers = _library()
    cfg = run.cfg
    losses = transformer.estimate_loss(run.model, {"train": run.train_ids, "val": run.val_ids}, cfg.batch_size,
                                       cfg.block_size, iters=cfg.eval_iters, seed=cfg.seed + 1)
    run.history["eval_step"].append(run.step)
    run.history["train_loss"].append(losses["train"])
    run.history["val_loss"].append(losses["val"])
    transformer.save_checkpoint(run.checkpoint, run.model, run.optimizer, step=run.step, config=asdict(cfg),
                                chars=run.tokenizer.chars, rng_state=run.rng.bit_generator.state,
                                dropout_rng_state=layers.get_rng().bit_generator.state, history=run.history,
                                text_sha256=run.text_sha256)
    output.say(f"step {run.step:>6}: train {losses['train']:.4f}  val {losses['val']:.4f}  (checkpoint saved)")


def train(run: Run, stop_at: Optional[int] = None) -> bool:
    "Train up to `stop_at` (default: the last step) with a progress bar. Returns True if Ctrl-C stopped it."
    transformer, step = _library()[:2]
    cfg, saved_step = run.cfg, run.step
    last = min(stop_at or cfg.steps, cfg.steps)
    tokens_per_step, tps = cfg.batch_size * cfg.block_size, 0.0
    with StopRequest() as stop, _progress() as progress:
        task = progress.add_task("train", total=cfg.steps, completed=run.step, loss=float("nan"), tps=0.0)
        while run.step < last and not stop.requested:
            started = time.perf_counter()
            x, y = transformer.get_batch(run.train_ids, cfg.batch_size, cfg.block_size, run.rng)
            loss = step.train_step(run.model, run.optimizer, x, y, max_norm=cfg.grad_clip or None,
                                   lr=learning_rate(cfg, run.step))
            if not math.isfinite(loss):
                raise TitoError(f"the loss became {loss} at step {run.step}; try a smaller --lr")
            run.step += 1
            run.history["step"].append(run.step)
            run.history["loss"].append(loss)
            rate = tokens_per_step / (time.perf_counter() - started)
            tps = rate if tps == 0 else 0.9 * tps + 0.1 * rate
            progress.update(task, completed=run.step, loss=loss, tps=tps)
            if run.step % cfg.eval_interval == 0 or run.step == cfg.steps:
                evaluate_and_save(run)
                saved_step = run.step
    if run.step != saved_step:
        evaluate_and_save(run)
    return stop.requested


def write_sample(run: Run) -> str:
    "Generate `sample_tokens` characters after a newline and save them next to the checkpoint."
    prompt = run.tokenizer.encode("\n") if "\n" in run.tokenizer.stoi else [0]
    ids = run.model.generate(np.array([prompt]), run.cfg.sample_tokens, temperature=run.cfg.temperature,
                             top_k=run.cfg.top_k, seed=run.cfg.seed)
    sample = run.tokenizer.decode(ids[0])
    (run.out / SAMPLE).write_text(sample, encoding="utf-8")
    return sample


def run_gpt(cfg: RunConfig, out: Path, resume: bool = False, stop_at: Optional[int] = None,
            given: frozenset = frozenset(), fast: Optional[bool] = None) -> int:
    """Train (or resume), checkpoint, plot and sample, on the path `choose_path(fast)` picks. Returns the process
    exit code (130 after Ctrl-C)."""
    _library()
    check_out(out)  # the inputs first: a bad one is one line, before anything is printed or written
    if resume:
        saved_run(out)
    else:
        read_text(cfg)
    path = choose_path(fast)
    output.say(str(path))
    with kernel_path(path.fast):
        return _run_gpt(cfg, out, resume, stop_at, given)


def _run_gpt(cfg: RunConfig, out: Path, resume: bool, stop_at: Optional[int], given: frozenset) -> int:
    run = resumed_run(out, cfg, given) if resume else new_run(cfg, out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TitoError(f"--out {out} cannot be made: {e.strerror or e}") from None
    cfg, started = run.cfg, time.perf_counter()
    output.say(f"GPT: {run.model.num_parameters():,} parameters, {cfg.num_layers} layers x {cfg.num_heads} heads "
               f"x {cfg.embed_dim} wide, context {cfg.block_size}, vocabulary {run.tokenizer.vocab_size}; "
               f"{len(run.train_ids):,} training / {len(run.val_ids):,} validation characters")
    interrupted = train(run, stop_at)
    plot_losses(run.history, out / LOSS_PLOT, f"GPT on {Path(cfg.text).name if cfg.text else 'Python stdlib sources'}")
    if run.step < cfg.steps:
        why = "interrupted" if interrupted else f"stopped at --stop-at {stop_at}"
        output.say(f"{why} at step {run.step} of {cfg.steps}: checkpoint {run.checkpoint} and loss curve kept (the "
                   f"sample comes at the last step); continue with --resume --out {out}", "yellow")
        return 130 if interrupted else 0
    sample = write_sample(run)
    minutes = (time.perf_counter() - started) / 60
    output.say(f"done: validation loss {run.history['val_loss'][-1]:.4f} after {run.step} steps "
               f"({minutes:.1f} min in this session); checkpoint {run.checkpoint}, loss curve {out / LOSS_PLOT}, "
               f"sample {out / SAMPLE}")
    output.rule("sample")
    output.say(sample)
    return 0
