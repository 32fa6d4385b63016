"""Module 04 optimizers without PyTorch: the update rules on hand-computed cases, in-place float32/float64 updates that
record no graph, skipping parameters without a gradient, gradient clipping, the warmup-cosine schedule, and
one-line errors for bad arguments."""
import math

import numpy as np
import pytest

from tinytorch.core.layers import Linear, ReLU, Sequential
from tinytorch.core.losses import cross_entropy
from tinytorch.core.optim import SGD, Adam, AdamW, CosineWarmup, Optimizer, clip_grad_norm_, lr_at
from tinytorch.core.tensor import Tensor

OPTIMIZERS = [(SGD, dict(lr=0.1)), (SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
              (Adam, dict(lr=0.01)), (Adam, dict(lr=0.01, weight_decay=0.1)), (AdamW, dict(lr=0.01))]
IDS = ["sgd", "sgd-momentum-wd", "adam", "adam-wd", "adamw"]


def param(values, dtype=np.float64):
    return Tensor(np.array(values, dtype=dtype), requires_grad=True)


def set_grad(p, values):
    p.grad = Tensor(np.array(values, dtype=p.dtype))


# --- update rules on cases computed by hand ----------------------------------------------------------------------------
@pytest.mark.exercise("sgd")
def test_sgd_plain_step():
    p = param([1.0, -2.0])
    opt = SGD([p], lr=0.5)
    set_grad(p, [0.2, -0.4])
    opt.step()
    np.testing.assert_allclose(p.data, [0.9, -1.8])


@pytest.mark.exercise("sgd")
def test_sgd_momentum_buffer_starts_as_the_first_gradient():
    p = param([0.0])
    opt = SGD([p], lr=1.0, momentum=0.5)
    for g, expected_velocity in [(4.0, 4.0), (0.0, 2.0), (2.0, 3.0)]:
        before = p.data.copy()
        set_grad(p, [g])
        opt.step()
        np.testing.assert_allclose(before - p.data, [expected_velocity])
    assert opt.state[0]["momentum"] is not p.grad.data


@pytest.mark.exercise("sgd")
def test_sgd_weight_decay_is_added_to_the_gradient_before_momentum():
    p = param([2.0])
    opt = SGD([p], lr=0.1, momentum=0.5, weight_decay=0.25)
    set_grad(p, [1.0])
    opt.step()                          # g = 1 + 0.25·2 = 1.5, v = 1.5
    np.testing.assert_allclose(p.data, [2.0 - 0.15])
    set_grad(p, [1.0])
    opt.step()                          # g = 1 + 0.25·1.85 = 1.4625, v = 0.75 + 1.4625
    np.testing.assert_allclose(p.data, [1.85 - 0.1 * (0.75 + 1.4625)])


@pytest.mark.exercise("adam")
def test_adam_first_step_moves_each_coordinate_by_about_lr():
    p = param([0.0, 0.0, 0.0, 0.0])
    opt = Adam([p], lr=0.01)
    set_grad(p, [1e-3, -5.0, 1e3, 0.0])
    opt.step()
    np.testing.assert_allclose(p.data, [-0.01, 0.01, -0.01, 0.0], rtol=1e-4)


@pytest.mark.exercise("adam")
def test_adam_bias_correction_against_the_textbook_formula(rng):
    beta1, beta2, lr, eps = 0.8, 0.95, 0.05, 1e-6
    p = param(rng.normal(size=5))
    expected, m, v = p.data.copy(), np.zeros(5), np.zeros(5)
    opt = Adam([p], lr=lr, betas=(beta1, beta2), eps=eps)
    for t in range(1, 8):
        g = rng.normal(size=5)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        expected -= lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps)
        set_grad(p, g)
        opt.step()
        np.testing.assert_allclose(p.data, expected, rtol=1e-12)
    assert opt.state[0]["step"] == 7


@pytest.mark.exercise("adamw")
def test_adamw_decays_the_weights_directly_and_adam_through_the_gradient():
    p_w, p_l2 = param([2.0, -4.0]), param([2.0, -4.0])
    adamw, adam = AdamW([p_w], lr=0.1, weight_decay=0.5), Adam([p_l2], lr=0.1, weight_decay=0.5)
    set_grad(p_w, [0.0, 0.0])
    set_grad(p_l2, [0.0, 0.0])
    adamw.step()
    adam.step()
    np.testing.assert_allclose(p_w.data, [2.0 * 0.95, -4.0 * 0.95])       # θ(1 − lr·λ), Adam part is 0
    np.testing.assert_allclose(p_l2.data, [1.9, -3.9], rtol=1e-6)          # the decay gradient normalised: a step of lr


@pytest.mark.exercise("adamw")
def test_adamw_default_weight_decay_is_0_01():
    assert AdamW([param([1.0])]).weight_decay == 0.01
    opt = Adam([param([1.0])])
    assert (opt.lr, opt.betas, opt.eps, opt.weight_decay) == (1e-3, (0.9, 0.999), 1e-8, 0.0)


# --- mechanics shared by all optimizers --------------------------------------------------------------------------------
@pytest.mark.exercise("adamw")
@pytest.mark.parametrize("cls, kwargs", OPTIMIZERS, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_updates_are_in_place_keep_the_dtype_and_record_no_graph(cls, kwargs, dtype):
    rng = np.random.default_rng(1)
    p = param(rng.normal(size=(3, 2)), dtype)
    array = p.data
    opt = cls([p], **kwargs)
    for _ in range(3):
        set_grad(p, rng.normal(size=(3, 2)))
        opt.step()
    assert p.data is array and p.dtype == dtype
    assert p.requires_grad and getattr(p, "_node", None) is None
    assert all(buf.dtype == dtype for buf in opt.state[0].values() if isinstance(buf, np.ndarray))
    assert not np.allclose(p.data, param(np.random.default_rng(1).normal(size=(3, 2)), dtype).data)


@pytest.mark.exercise("adamw")
@pytest.mark.parametrize("cls, kwargs", OPTIMIZERS, ids=IDS)
def test_parameters_without_gradient_are_skipped(cls, kwargs):
    used, unused = param([1.0, 2.0]), param([3.0, 4.0])
    opt = cls([used, unused], **kwargs)
    for _ in range(2):
        set_grad(used, [0.5, -0.5])
        opt.step()
    np.testing.assert_array_equal(unused.data, [3.0, 4.0])
    assert opt.state[1] == {}
    assert not np.allclose(used.data, [1.0, 2.0])


@pytest.mark.exercise("adamw")
@pytest.mark.parametrize("cls, kwargs", OPTIMIZERS, ids=IDS)
def test_zero_grad_forgets_gradients(cls, kwargs):
    a, b = param([1.0]), param([2.0])
    opt = cls([a, b], **kwargs)
    set_grad(a, [1.0])
    opt.zero_grad()
    assert a.grad is None and b.grad is None


@pytest.mark.exercise("adamw")
@pytest.mark.parametrize("cls, kwargs", OPTIMIZERS, ids=IDS)
def test_accepts_generators_and_a_single_tensor(cls, kwargs):
    ps = [param([1.0]), param([2.0])]
    assert cls(iter(ps), **kwargs).params == ps
    assert cls((p for p in ps), **kwargs).params == ps
    assert cls(ps[0], **kwargs).params == [ps[0]]


@pytest.mark.exercise("adamw")
def test_state_size_counts_buffers():
    ps = [param(np.zeros((3, 4))), param(np.zeros(5))]
    for cls, kwargs, per_param in [(SGD, dict(lr=0.1), 0), (SGD, dict(lr=0.1, momentum=0.9), 1), (Adam, {}, 2), (AdamW, {}, 2)]:
        opt = cls(ps, **kwargs)
        for p in ps:
            set_grad(p, np.ones(p.shape))
        opt.step()
        assert opt.state_size() == per_param * 17


@pytest.mark.exercise("adamw")
@pytest.mark.parametrize("cls, kwargs", [(SGD, dict(lr=0.05, momentum=0.9)), (Adam, dict(lr=0.05)), (AdamW, dict(lr=0.05))],
                         ids=["sgd-momentum", "adam", "adamw"])
def test_optimizers_train_a_small_model(cls, kwargs, rng):
    "A float64 MLP fits 32 random points with 4 labels: the loss must fall well below ln 4."
    model = Sequential(Linear(5, 32), ReLU(), Linear(32, 4)).to(np.float64)
    x, y = Tensor(rng.normal(size=(32, 5))), rng.integers(0, 4, size=32)
    opt = cls(model.parameters(), **kwargs)
    for _ in range(200):
        loss = cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.25 * math.log(4), loss.item()
    assert all(p.dtype == np.float64 for p in model.parameters())


# --- bad arguments -----------------------------------------------------------------------------------------------------
@pytest.mark.exercise("adamw")
@pytest.mark.parametrize("cls", [SGD, Adam, AdamW])
@pytest.mark.parametrize("params", [[], (), iter([]), (p for p in [])], ids=["list", "tuple", "iterator", "generator"])
def test_no_parameters_is_an_error(cls, params):
    with pytest.raises(ValueError, match="no parameters"):
        cls(params, lr=0.1)


@pytest.mark.exercise("adamw")
@pytest.mark.parametrize("cls", [SGD, Adam, AdamW])
@pytest.mark.parametrize("lr", [0, 0.0, -1e-3, float("nan")])
def test_learning_rate_must_be_positive(cls, lr):
    with pytest.raises(ValueError, match="learning rate") as info:
        cls([param([1.0])], lr=lr)
    assert "\n" not in str(info.value)


@pytest.mark.exercise("sgd")
@pytest.mark.parametrize("bad", [[np.zeros(3)], [Tensor(np.array([1, 2]))], [1.0]])
def test_only_float_tensors_can_be_optimized(bad):
    with pytest.raises(TypeError):
        SGD(bad, lr=0.1)


@pytest.mark.exercise("adamw")
@pytest.mark.parametrize("make", [lambda p: SGD([p], lr=0.1, momentum=-0.1), lambda p: SGD([p], lr=0.1, weight_decay=-1),
                                  lambda p: Adam([p], betas=(0.9, 1.0)), lambda p: Adam([p], betas=(-0.1, 0.9)),
                                  lambda p: Adam([p], betas=(0.9,)), lambda p: AdamW([p], eps=-1e-8),
                                  lambda p: AdamW([p], weight_decay=-0.01)])
def test_bad_hyper_parameters_are_errors(make):
    with pytest.raises(ValueError):
        make(param([1.0]))


@pytest.mark.exercise("adamw")
def test_the_base_class_has_no_update_rule():
    opt = Optimizer([param([1.0])], lr=0.1)
    opt.params[0].grad = Tensor(np.array([1.0]))
    with pytest.raises(NotImplementedError):
        opt.step()


# --- gradient clipping -------------------------------------------------------------------------------------------------
@pytest.mark.exercise("clip-grad-norm")
def test_clip_scales_all_gradients_by_one_factor():
    a, b, c = param(np.zeros(2)), param(np.zeros((1, 1))), param(np.zeros(3))
    set_grad(a, [3.0, 0.0])
    set_grad(b, [[4.0]])
    norm = clip_grad_norm_([a, b, c], max_norm=2.0)
    assert norm == pytest.approx(5.0)
    factor = 2.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(a.grad.data, [3.0 * factor, 0.0])
    np.testing.assert_allclose(b.grad.data, [[4.0 * factor]])
    assert c.grad is None


@pytest.mark.exercise("clip-grad-norm")
def test_clip_leaves_short_gradients_alone_and_returns_their_norm():
    a = param(np.zeros(2))
    set_grad(a, [0.3, 0.4])
    assert clip_grad_norm_(a, max_norm=1.0) == pytest.approx(0.5)
    np.testing.assert_array_equal(a.grad.data, [0.3, 0.4])
    assert clip_grad_norm_([param([1.0])], max_norm=1.0) == 0.0        # nothing has a gradient


@pytest.mark.exercise("clip-grad-norm")
def test_clip_keeps_float32_gradients_float32():
    a = param(np.zeros(4), np.float32)
    set_grad(a, [100.0, 0.0, 0.0, 0.0])
    clip_grad_norm_([a], 1.0)
    assert a.grad.dtype == np.float32 and a.grad.data[0] == pytest.approx(1.0, rel=1e-5)


@pytest.mark.exercise("clip-grad-norm")
@pytest.mark.parametrize("max_norm", [0.0, -1.0])
def test_clip_rejects_non_positive_max_norm(max_norm):
    with pytest.raises(ValueError, match="max_norm"):
        clip_grad_norm_([param([1.0])], max_norm)


# --- learning-rate schedule --------------------------------------------------------------------------------------------
@pytest.mark.exercise("lr-schedule")
def test_lr_at_key_steps():
    base, warmup, total, low = 0.6, 10, 110, 0.1
    assert lr_at(0, base, warmup, total, low) == pytest.approx(0.06)            # first warmup step: base / warmup
    assert lr_at(4, base, warmup, total, low) == pytest.approx(0.3)
    assert lr_at(9, base, warmup, total, low) == pytest.approx(base)            # end of warmup
    assert lr_at(10, base, warmup, total, low) == pytest.approx(base)           # cosine starts at the top
    assert lr_at(60, base, warmup, total, low) == pytest.approx((base + low) / 2)
    assert lr_at(35, base, warmup, total, low) == pytest.approx(low + (base - low) * (1 + math.cos(math.pi / 4)) / 2)
    assert lr_at(110, base, warmup, total, low) == pytest.approx(low)
    assert lr_at(10_000, base, warmup, total, low) == low
    assert lr_at(0, base, 0, total) == pytest.approx(base)                      # no warmup


@pytest.mark.exercise("lr-schedule")
def test_lr_at_rises_then_falls():
    values = [lr_at(s, 1.0, 20, 200, 0.05) for s in range(250)]
    assert all(a < b for a, b in zip(values[:19], values[1:20]))
    assert all(a >= b for a, b in zip(values[20:], values[21:]))
    assert min(values) == 0.05 and max(values) == pytest.approx(1.0)


@pytest.mark.exercise("lr-schedule")
def test_cosine_warmup_drives_the_optimizer_lr():
    opt = AdamW([param([1.0])], lr=3e-3)
    sched = CosineWarmup(opt, warmup_steps=4, total_steps=12, min_lr=3e-4)
    seen = [opt.lr]
    for _ in range(15):
        sched.step()
        seen.append(opt.lr)
    assert seen == [lr_at(s, 3e-3, 4, 12, 3e-4) for s in range(16)]
    assert sched.base_lr == 3e-3 and sched.last_step == 15


@pytest.mark.exercise("lr-schedule")
@pytest.mark.parametrize("warmup, total, min_lr", [(-1, 10, 0.0), (11, 10, 0.0), (2, 10, -0.1), (2, 10, 0.5)])
def test_cosine_warmup_rejects_bad_arguments(warmup, total, min_lr):
    with pytest.raises(ValueError):
        CosineWarmup(SGD([param([1.0])], lr=0.1), warmup, total, min_lr)


@pytest.mark.exercise("adamw")
@pytest.mark.parametrize("make", [lambda ps: SGD(ps, lr=0.1), lambda ps: Adam(ps), lambda ps: AdamW(ps)])
def test_the_same_parameter_twice_is_a_clear_error(make):
    w = Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(ValueError, match="same parameter more than once"):
        make([w, w])
