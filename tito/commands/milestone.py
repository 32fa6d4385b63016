"""`tito milestone list / run`: end-to-end runs of the library a student built (the work: `tito.milestone`)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from tito.milestone import MILESTONES, RunConfig, run_gpt
from tito.output import say
from tito.workspace import TitoError

app = typer.Typer(help="Milestones: end-to-end runs of the library you built.", no_args_is_help=True)

_DEFAULTS = RunConfig()


@app.command("list")
def list_milestones():
    "The milestones there are."
    say("gpt  train a small GPT on a text file (the module 06 capstone): tito milestone run gpt --help")


@app.command("run")
def run(
    name: str = typer.Argument(..., help=f"Which milestone: {', '.join(MILESTONES)}."),
    text: Optional[Path] = typer.Option(None, "--text", help="A UTF-8 text file to train on (default: Python's "
                                        "standard-library sources)."),
    max_chars: Optional[int] = typer.Option(None, help="Use only the first MAX_CHARS characters of the text."),
    steps: int = typer.Option(_DEFAULTS.steps, min=1, help="Training steps (the learning-rate schedule spans them)."),
    batch_size: int = typer.Option(_DEFAULTS.batch_size, min=1, help="Sequences per step."),
    block_size: int = typer.Option(_DEFAULTS.block_size, min=1, help="Context length (the model's max_seq_len)."),
    embed_dim: int = typer.Option(_DEFAULTS.embed_dim, min=1, help="Width of the residual stream."),
    num_layers: int = typer.Option(_DEFAULTS.num_layers, min=1, help="Transformer blocks."),
    num_heads: int = typer.Option(_DEFAULTS.num_heads, min=1, help="Attention heads per block."),
    dropout: float = typer.Option(_DEFAULTS.dropout, min=0.0, max=0.99, help="Dropout probability."),
    lr: float = typer.Option(_DEFAULTS.lr, help="Peak learning rate (AdamW, warmup then cosine decay)."),
    warmup: int = typer.Option(_DEFAULTS.warmup, min=0, help="Warmup steps."),
    weight_decay: float = typer.Option(_DEFAULTS.weight_decay, help="AdamW weight decay."),
    eval_interval: int = typer.Option(_DEFAULTS.eval_interval, min=1, help="Evaluate and checkpoint every N steps."),
    eval_iters: int = typer.Option(_DEFAULTS.eval_iters, min=1, help="Batches per evaluation."),
    sample_tokens: int = typer.Option(_DEFAULTS.sample_tokens, min=0, help="Characters to generate at the end."),
    temperature: float = typer.Option(_DEFAULTS.temperature, min=0.0, help="Sampling temperature."),
    top_k: Optional[int] = typer.Option(None, min=1, help="Sample only among the K most likely characters."),
    seed: int = typer.Option(_DEFAULTS.seed, help="Seed for the weights, the batches and the sample."),
    out: Path = typer.Option(Path("runs/gpt"), help="Folder for the checkpoint, loss curve and sample."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run saved in --out."),
    stop_at: Optional[int] = typer.Option(None, min=1, help="Stop after this step, with a checkpoint and the loss "
                                          "curve (no sample: it comes at the last step); --resume continues."),
    fast: Optional[bool] = typer.Option(None, "--fast/--plain", help="The fast kernels (modules 07 and 08), or the plain ops of "
                                        "modules 01-06 (default: fast when module 08 is complete)."),
):
    "Train a GPT with your tinytorch: progress bar, validation loss, checkpoint, loss curve and a sample."
    if name not in MILESTONES:
        raise TitoError(f"unknown milestone {name!r}; available: {', '.join(MILESTONES)}")
    options = dict(text=None if text is None else str(text), max_chars=max_chars, steps=steps,
                   batch_size=batch_size, block_size=block_size, embed_dim=embed_dim, num_layers=num_layers,
                   num_heads=num_heads, dropout=dropout, lr=lr, warmup=warmup, weight_decay=weight_decay,
                   eval_interval=eval_interval, eval_iters=eval_iters, sample_tokens=sample_tokens,
                   temperature=temperature, top_k=top_k, seed=seed)
    cfg = RunConfig(**options)
    given = frozenset(k for k, v in options.items() if v != getattr(_DEFAULTS, k))
    raise typer.Exit(run_gpt(cfg, out, resume=resume, stop_at=stop_at, given=given, fast=fast))
