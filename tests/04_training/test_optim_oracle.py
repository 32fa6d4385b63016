"""Module 04 optimizers against PyTorch (float64): ten steps on the same parameters with the same sequence of gradients
(one parameter sometimes without a gradient) must give PyTorch's parameters to 1e-10 after every step. Also
`clip_grad_norm_` against `torch.nn.utils.clip_grad_norm_`, and the warmup-cosine schedule against PyTorch's
LinearLR + CosineAnnealingLR."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (.venv/bin/pip install -e '.[course]')")

from tinytorch.core.optim import SGD, Adam, AdamW, CosineWarmup, clip_grad_norm_, lr_at  # noqa: E402
from tinytorch.core.tensor import Tensor  # noqa: E402

pytestmark = pytest.mark.oracle

SHAPES = [(3, 4), (4,), ()]
STEPS = 10
SKIPPED = {(3, 1), (6, 2)}   # (step, parameter) pairs without a gradient: both libraries must skip them


def gradient_sequence(seed):
    rng = np.random.default_rng(seed)
    return [[None if (step, i) in SKIPPED else rng.normal(scale=10 ** rng.uniform(-2, 1), size=shape)
             for i, shape in enumerate(SHAPES)] for step in range(STEPS)]


CASES = {
    "sgd": (SGD, torch.optim.SGD, dict(lr=0.1)),
    "sgd-momentum": (SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9)),
    "sgd-weight-decay": (SGD, torch.optim.SGD, dict(lr=0.1, weight_decay=0.3)),
    "sgd-momentum-weight-decay": (SGD, torch.optim.SGD, dict(lr=0.02, momentum=0.7, weight_decay=0.05)),
    "adam": (Adam, torch.optim.Adam, dict(lr=0.01)),
    "adam-betas-eps": (Adam, torch.optim.Adam, dict(lr=0.3, betas=(0.5, 0.8), eps=1e-3)),
    "adam-weight-decay": (Adam, torch.optim.Adam, dict(lr=0.01, weight_decay=0.1)),
    "adamw-default-decay": (AdamW, torch.optim.AdamW, dict(lr=0.01)),
    "adamw": (AdamW, torch.optim.AdamW, dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.5)),
}


@pytest.mark.exercise("adamw")
@pytest.mark.parametrize("case", CASES)
def test_optimizer_matches_torch_for_ten_steps(case, rng):
    ours_cls, torch_cls, kwargs = CASES[case]
    start = [rng.normal(size=shape) for shape in SHAPES]
    ours = [Tensor(a.copy(), requires_grad=True) for a in start]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in start]
    opt, opt_t = ours_cls(ours, **kwargs), torch_cls(theirs, **kwargs)
    for step, grads in enumerate(gradient_sequence(seed=7)):
        opt.zero_grad()
        opt_t.zero_grad()
        for p, p_t, g in zip(ours, theirs, grads):
            if g is not None:
                p.grad, p_t.grad = Tensor(g.copy()), torch.tensor(g.copy())
        opt.step()
        opt_t.step()
        for i, (p, p_t) in enumerate(zip(ours, theirs)):
            np.testing.assert_allclose(p.data, p_t.detach().numpy(), rtol=1e-10, atol=1e-12,
                                       err_msg=f"{case}: parameter {i} after step {step + 1}")


@pytest.mark.exercise("adamw")
@pytest.mark.parametrize("case", ["sgd-momentum", "adam", "adamw"])
def test_optimizer_matches_torch_with_a_learning_rate_changed_between_steps(case, rng):
    "A scheduler changes `lr` between steps; both libraries must read the current value."
    ours_cls, torch_cls, kwargs = CASES[case]
    p = Tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    p_t = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64, requires_grad=True)
    opt, opt_t = ours_cls([p], **kwargs), torch_cls([p_t], **kwargs)
    for step in range(STEPS):
        lr = kwargs["lr"] * (step + 1) / STEPS
        opt.lr = lr
        for group in opt_t.param_groups:
            group["lr"] = lr
        g = rng.normal(size=3)
        p.grad, p_t.grad = Tensor(g.copy()), torch.tensor(g.copy())
        opt.step()
        opt_t.step()
        np.testing.assert_allclose(p.data, p_t.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.exercise("clip-grad-norm")
@pytest.mark.parametrize("max_norm", [0.5, 3.0, 1e3])
def test_clip_grad_norm_matches_torch(max_norm, rng):
    grads = [rng.normal(size=shape) for shape in [(3, 4), (5,), (2, 2, 2)]]
    ours = [Tensor(np.zeros(g.shape), requires_grad=True) for g in grads]
    theirs = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for p, p_t, g in zip(ours, theirs, grads):
        p.grad, p_t.grad = Tensor(g.copy()), torch.tensor(g.copy())
    extra = Tensor(np.zeros(2), requires_grad=True)          # no gradient: ignored by both
    extra_t = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    norm = clip_grad_norm_(ours + [extra], max_norm)
    norm_t = torch.nn.utils.clip_grad_norm_(theirs + [extra_t], max_norm)
    np.testing.assert_allclose(norm, norm_t.item(), rtol=1e-12)
    for p, p_t in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.data, p_t.grad.numpy(), rtol=1e-12, atol=1e-15)
    assert extra.grad is None


@pytest.mark.exercise("lr-schedule")
@pytest.mark.parametrize("warmup, total, min_lr", [(5, 30, 0.0), (1, 12, 0.01), (10, 11, 0.05), (7, 40, 0.099)])
def test_schedule_matches_torch_linear_warmup_then_cosine(warmup, total, min_lr):
    base_lr = 0.1
    p_t = torch.zeros(1, requires_grad=True)
    opt_t = torch.optim.SGD([p_t], lr=base_lr)
    torch_sched = torch.optim.lr_scheduler.SequentialLR(opt_t, [
        torch.optim.lr_scheduler.LinearLR(opt_t, start_factor=1 / warmup, end_factor=1.0, total_iters=warmup - 1),
        torch.optim.lr_scheduler.CosineAnnealingLR(opt_t, T_max=total - warmup, eta_min=min_lr)], milestones=[warmup])
    opt = SGD([Tensor(np.zeros(1), requires_grad=True)], lr=base_lr)
    sched = CosineWarmup(opt, warmup, total, min_lr=min_lr)
    for step in range(total + 1):
        expected = opt_t.param_groups[0]["lr"]
        assert np.isclose(opt.lr, expected, rtol=1e-9, atol=1e-12), (step, opt.lr, expected)
        assert opt.lr == lr_at(step, base_lr, warmup, total, min_lr)
        opt_t.step()
        torch_sched.step()
        opt.step()
        sched.step()
