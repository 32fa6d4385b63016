"""Gradients of every parameter of the transformer, checked against central differences in float64.

`gradcheck` contracts the output with a random upstream gradient and checks each input on up to `max_coords`
coordinates; the sizes here are tiny so that most tensors are checked on every coordinate.
"""
import numpy as np
import pytest

from tinytorch.core.attention import create_causal_mask
from tinytorch.core.autograd import GradcheckError, gradcheck
from tinytorch.core.layers import manual_seed
from tinytorch.core.tensor import Tensor
from tinytorch.core.transformer import GPT, MLP, TransformerBlock

IDS = np.random.default_rng(0).integers(0, 7, size=(2, 5))


def expected_parameter_names(num_layers):
    block = ["ln1.weight", "ln1.bias", "attn.q_proj.weight", "attn.q_proj.bias", "attn.k_proj.weight",
             "attn.k_proj.bias", "attn.v_proj.weight", "attn.v_proj.bias", "attn.out_proj.weight",
             "attn.out_proj.bias", "ln2.weight", "ln2.bias", "mlp.fc.weight", "mlp.fc.bias", "mlp.proj.weight",
             "mlp.proj.bias"]
    names = {"token_embedding.weight", "position_embedding.weight", "ln_f.weight", "ln_f.bias", "lm_head.weight"}
    return names | {f"blocks.{i}.{n}" for i in range(num_layers) for n in block}


@pytest.mark.exercise("gpt")
def test_gpt_has_exactly_the_expected_parameters(tiny_gpt64):
    assert {name for name, _ in tiny_gpt64.named_parameters()} == expected_parameter_names(2)


@pytest.mark.exercise("gpt")
@pytest.mark.parametrize("group", ["embeddings", "block0", "block1", "final"])
def test_gpt_gradient_of_every_parameter(tiny_gpt64, perturbed, group):
    "Every coordinate of every parameter of a 2-layer GPT, with a random upstream gradient on the logits."
    model = perturbed(tiny_gpt64)
    named = dict(model.named_parameters())
    prefix = {"embeddings": ("token_embedding", "position_embedding"), "block0": ("blocks.0.",),
              "block1": ("blocks.1.",), "final": ("ln_f", "lm_head")}[group]
    chosen = [p for name, p in named.items() if name.startswith(prefix)]
    assert chosen
    others = [p for p in named.values() if all(p is not c for c in chosen)]
    for p in others:
        p.requires_grad = False
    try:
        gradcheck(lambda *params: model(IDS), chosen)
    finally:
        for p in others:
            p.requires_grad = True


@pytest.mark.exercise("gpt")
def test_gpt_gradients_with_tied_weights(perturbed):
    "The token embedding gets gradient from both the lookup and the LM head when they share the matrix."
    manual_seed(0)
    model = perturbed(GPT(7, 8, 1, 2, 5, tie_weights=True, seed=2).to(np.float64))
    gradcheck(lambda *p: model(IDS), [model.token_embedding.weight, model.blocks[0].mlp.fc.weight])


@pytest.mark.exercise("transformer-block")
def test_transformer_block_gradients_with_causal_mask(perturbed, rng):
    manual_seed(1)
    block = perturbed(TransformerBlock(8, 2).to(np.float64))
    x = Tensor(rng.normal(size=(2, 5, 8)), requires_grad=True)
    mask = create_causal_mask(5)
    gradcheck(lambda x, *params: block(x, mask=mask), [x, *block.parameters()])


@pytest.mark.exercise("mlp")
def test_mlp_gradients(rng):
    manual_seed(2)
    mlp = MLP(6, 10).to(np.float64)
    x = Tensor(rng.normal(size=(3, 6)), requires_grad=True)
    gradcheck(lambda x, *params: mlp(x), [x, *mlp.parameters()])


@pytest.mark.exercise("transformer-block")
def test_gradcheck_would_catch_a_missing_residual(perturbed, monkeypatch, rng):
    "The check above can fail: a block whose gradient skips the residual path is caught."
    from tinytorch.core import transformer
    manual_seed(1)
    block = perturbed(TransformerBlock(8, 2).to(np.float64))
    x = Tensor(rng.normal(size=(1, 3, 8)), requires_grad=True)

    def broken_forward(self, x, mask=None, cache=None):
        h = self.attn(self.ln1(x), mask=mask, cache=cache)
        x = x.detach() + h          # the residual path loses its gradient
        return x + self.mlp(self.ln2(x))

    monkeypatch.setattr(transformer.TransformerBlock, "forward", broken_forward)
    with pytest.raises(GradcheckError):
        gradcheck(lambda x: block(x), [x])
