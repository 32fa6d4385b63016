"""Module and Parameter bookkeeping: discovery, names, sharing, modes, dtype, state dicts."""
import numpy as np
import pytest

from tinytorch.core.layers import (Dropout, Embedding, LayerNorm, Linear, Module, Parameter, ReLU, Sequential)
from tinytorch.core.tensor import Tensor


class Attention(Module):
    def __init__(self, d):
        self.q_proj, self.k_proj = Linear(d, d), Linear(d, d, bias=False)


class Block(Module):
    def __init__(self, d):
        self.attn = Attention(d)
        self.ln = LayerNorm(d)
        self.drop = Dropout(0.1)


class Net(Module):
    def __init__(self, d=4, n=2):
        self.embed = Embedding(7, d)
        self.blocks = [Block(d) for _ in range(n)]
        self.heads = (Linear(d, 3),)
        self.extras = {"gate": Parameter(np.ones(d, dtype=np.float32))}
        self.config = {"d": d, "name": "net"}     # plain data is ignored
        self.scale = 2.0


@pytest.mark.exercise("dropout")
def test_parameter_is_a_tensor_that_requires_grad():
    p = Parameter(np.zeros(3, dtype=np.float32))
    assert isinstance(p, Tensor) and p.requires_grad and p.dtype == np.float32
    assert not Parameter(np.zeros(3), requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter(")


@pytest.mark.exercise("dropout")
def test_named_parameters_walks_attributes_lists_tuples_and_dicts():
    names = [name for name, _ in Net().named_parameters()]
    assert names == [
        "embed.weight",
        "blocks.0.attn.q_proj.weight", "blocks.0.attn.q_proj.bias", "blocks.0.attn.k_proj.weight",
        "blocks.0.ln.weight", "blocks.0.ln.bias",
        "blocks.1.attn.q_proj.weight", "blocks.1.attn.q_proj.bias", "blocks.1.attn.k_proj.weight",
        "blocks.1.ln.weight", "blocks.1.ln.bias",
        "heads.0.weight", "heads.0.bias",
        "extras.gate",
    ]
    net = Net()
    assert all(isinstance(p, Parameter) for p in net.parameters())
    assert [p for _, p in net.named_parameters()] == net.parameters()


@pytest.mark.exercise("dropout")
def test_num_parameters_counts_every_number_once():
    d = 4
    expected = 7 * d + 2 * ((d * d + d) + d * d + 2 * d) + (d * 3 + 3) + d
    assert Net(d).num_parameters() == expected


@pytest.mark.exercise("dropout")
def test_shared_parameter_and_shared_module_listed_once():
    net = Net()
    net.blocks[1].attn.k_proj.weight = net.blocks[0].attn.k_proj.weight      # tied weight
    net.again = net.blocks[0]                                                 # the same module twice
    params = net.parameters()
    assert len(params) == len({id(p) for p in params}) == 13
    names = [n for n, _ in net.named_parameters()]
    assert "blocks.1.attn.k_proj.weight" not in names and "blocks.0.attn.k_proj.weight" in names
    assert not any(n.startswith("again.") for n in names)


@pytest.mark.exercise("dropout")
def test_reference_cycle_does_not_loop():
    net = Net()
    net.blocks[0].parent = net
    assert len(net.parameters()) == 14


@pytest.mark.exercise("dropout")
def test_train_eval_propagate_and_return_self():
    net = Net()
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    assert not net.blocks[1].drop.training
    assert net.train() is net and all(m.training for m in net.modules())
    assert net.train(False) is net and not net.heads[0].training


@pytest.mark.exercise("dropout")
def test_eval_switches_dropout_to_identity():
    model = Sequential(Linear(4, 4), Dropout(0.5))
    x = Tensor(np.ones((3, 4), dtype=np.float32))
    model.eval()
    first, second = model(x).data, model(x).data
    assert np.array_equal(first, second)


@pytest.mark.exercise("dropout")
def test_to_converts_in_place_and_returns_self():
    net = Net()
    params = net.parameters()
    net.heads[0].weight.grad = Tensor(np.ones((4, 3), dtype=np.float32))
    assert net.to(np.float64) is net
    assert net.parameters() == params                      # the same Parameter objects, converted
    assert all(p.dtype == np.float64 for p in params)
    assert net.heads[0].weight.grad.dtype == np.float64
    assert net.to(np.float32).embed.weight.dtype == np.float32
    with pytest.raises(TypeError, match="int"):
        net.to(np.int64)


@pytest.mark.exercise("layer-norm")
def test_float64_model_runs_in_float64_end_to_end(rng):
    model = Sequential(Linear(3, 5), ReLU(), LayerNorm(5), Linear(5, 2)).to(np.float64)
    x = Tensor(rng.normal(size=(4, 3)), requires_grad=True)
    y = model(x)
    assert y.dtype == np.float64
    y.sum().backward()
    assert x.grad.dtype == np.float64 and all(p.grad.dtype == np.float64 for p in model.parameters())


@pytest.mark.exercise("layer-norm")
def test_float32_default_and_no_silent_promotion():
    model = Sequential(Linear(3, 5), LayerNorm(5))
    assert all(p.dtype == np.float32 for p in model.parameters())
    assert model(Tensor([[1.0, 2.0, 3.0]])).dtype == np.float32
    assert model(Tensor(np.ones((1, 3)))).dtype == np.float32          # float64 input: cast, not promoted


@pytest.mark.exercise("linear")
def test_zero_grad_clears_every_gradient():
    model = Sequential(Linear(3, 4), ReLU(), Linear(4, 1))
    model(Tensor(np.ones((2, 3), dtype=np.float32))).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.exercise("dropout")
def test_state_dict_round_trip_copies():
    a, b = Net(), Net()
    state = a.state_dict()
    assert list(state) == [n for n, _ in a.named_parameters()]
    assert all(isinstance(v, np.ndarray) for v in state.values())
    a.embed.weight.data[...] = 0.0                    # the state dict is a copy, not a view
    assert not np.all(state["embed.weight"] == 0.0)
    weight_before = b.heads[0].weight
    assert b.load_state_dict(state) is b
    assert b.heads[0].weight is weight_before          # loaded in place
    for name, p in b.named_parameters():
        assert np.array_equal(p.data, state[name])
    assert b.embed.weight.data is not state["embed.weight"]


@pytest.mark.exercise("dropout")
def test_load_state_dict_errors_name_the_problem():
    net = Net()
    state = net.state_dict()
    missing = dict(state)
    del missing["blocks.1.ln.bias"]
    with pytest.raises(KeyError, match=r"missing.*blocks\.1\.ln\.bias"):
        net.load_state_dict(missing)
    with pytest.raises(KeyError, match=r"unexpected.*blocks\.9\.ln\.bias"):
        net.load_state_dict({**state, "blocks.9.ln.bias": np.zeros(4)})
    wrong = {**state, "heads.0.weight": np.zeros((3, 4))}
    with pytest.raises(ValueError, match=r"heads\.0\.weight.*\(3, 4\).*\(4, 3\)"):
        net.load_state_dict(wrong)
    assert not np.all(net.heads[0].weight.data == 0)      # a failed load changes nothing


@pytest.mark.exercise("linear")
def test_sequential_indexing_len_names():
    model = Sequential(Linear(2, 3), ReLU(), Linear(3, 1))
    assert len(model) == 3 and isinstance(model[2], Linear) and isinstance(model[-1], Linear)
    assert isinstance(model[:2], Sequential) and len(model[:2]) == 2
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert list(model) == model.layers
    x = Tensor(np.ones((4, 2), dtype=np.float32))
    assert np.array_equal(model(x).data, model[2](model[1](model[0](x))).data)


@pytest.mark.exercise("linear")
def test_nested_sequential_names():
    model = Sequential(Sequential(Linear(2, 2)), Linear(2, 1))
    assert [n for n, _ in model.named_parameters()] == ["0.0.weight", "0.0.bias", "1.weight", "1.bias"]


@pytest.mark.exercise("module")
def test_module_without_forward_is_a_clear_error():
    with pytest.raises(NotImplementedError, match="forward"):
        Module()(1)


@pytest.mark.exercise("module")
def test_call_runs_forward_with_arguments():
    class Add(Module):
        def forward(self, a, b=0, *, c=0):
            return a + b + c
    assert Add()(1, 2, c=3) == 6


@pytest.mark.exercise("linear")
def test_repr_shows_the_tree():
    text = repr(Sequential(Linear(2, 3), ReLU()))
    assert "Linear(in_features=2, out_features=3, bias=True)" in text and "(1): ReLU()" in text
