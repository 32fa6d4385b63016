"""Plausible student bugs, per module, for `test_bug_catalogue.py` and `test_blame_table.py`.

Each bug is one edit of a solution cell of the module's notebook (`old` -> `new` in the cell `grade_id`), written
the way a student gets the exercise wrong. Autograding the edited notebook must cost points (test_bug_catalogue), and
`tito module complete` must name the bug's exercise first, its test suite agreeing (test_blame_table). At least eight
bugs per module, and three per exercise; each costs an autograde and a blame-table entry in CI.
"""
from typing import NamedTuple


class Bug(NamedTuple):
    slug: str  # the student id it is graded under: short, unique within its module
    what: str  # the mistake, in a student's terms
    grade_id: str  # the solution cell that is edited
    old: str
    new: str


BUGS: dict[str, list[Bug]] = {}

BUGS["01"] = [
    Bug("left-aligned-broadcasting", "broadcasting compares shapes from the left", "broadcast-check",
        """    if a.shape != b.shape:
        try:
            np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise ValueError(f"{op}: shapes {a.shape} and {b.shape} do not broadcast") from None""",
        """    for x, y in zip(a.shape, b.shape):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"{op}: shapes {a.shape} and {b.shape} do not broadcast")"""),
    Bug("numpy-scalar-float32", "numpy scalars are converted like Python numbers (to float32)", "as-array",
        "    elif isinstance(data, (np.ndarray, np.generic)):", "    elif isinstance(data, np.ndarray):"),
    Bug("dtype-via-float32", "numbers go through float32 even when a dtype is given", "as-array",
        """        arr = np.asarray(data, dtype=dtype)
        if dtype is None and arr.dtype.kind in "iuf":""",
        """        arr = np.asarray(data)
        if arr.dtype.kind in "iuf":"""),
    Bug("mean-over-last-axis", "mean divides the sum by the length of the last axis", "reductions",
        "    out = np.mean(a.data, axis=axis, keepdims=keepdims)",
        "    out = np.sum(a.data, axis=axis, keepdims=keepdims) / a.shape[-1]"),
    Bug("mean-first-axis-only", "mean divides by the length of the first reduced axis (fits single-axis checks)",
        "reductions", "    out = np.mean(a.data, axis=axis, keepdims=keepdims)",
        "    out = np.sum(a.data, axis=axis, keepdims=keepdims) / (a.size if axis is None else a.shape[axis[0]])"),
    Bug("max-drops-keepdims", "max ignores keepdims", "reductions",
        "    out = np.max(a.data, axis=axis, keepdims=keepdims)", "    out = np.max(a.data, axis=axis)"),
    Bug("flat-matmul-not-reshaped", "the flattened (batch·seq, k) @ (k, m) product is not reshaped back",
        "matmul", "        out = (a.data.reshape(-1, a.shape[-1]) @ b.data).reshape(*a.shape[:-1], b.shape[-1])",
        "        out = a.data.reshape(-1, a.shape[-1]) @ b.data"),
    Bug("batched-matmul-with-dot", "np.dot for the general case: right for matrices, wrong for batches (it pairs every "
        "batch of a with every batch of b)", "matmul", "        out = np.matmul(a.data, b.data)",
        "        out = np.dot(a.data, b.data)"),
    Bug("matmul-check-assumes-2d", "the alignment check reads b.shape[-2] even for a 1-D b", "matmul",
        "    k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]", "    k_b = b.shape[-2]"),
    Bug("transpose-reverses-axes", "transpose reverses every axis (numpy's .T) instead of swapping two",
        "shape-ops", "        out = np.swapaxes(a.data, dim0, dim1)", "        out = a.data.T"),
    Bug("masked-fill-value-dtype", "masked_fill takes the value's dtype (np.float64 turns float32 into float64)",
        "indexing", "    out = np.where(mask, np.asarray(_data(value), dtype=a.dtype), a.data)",
        "    out = np.where(mask, _data(value), a.data)"),
    Bug("masked-fill-no-shape-check", "masked_fill leaves the shape check to numpy", "indexing",
        """    try:
        shape = np.broadcast_shapes(a.shape, mask.shape)
    except ValueError:
        shape = None
    if shape != a.shape:
        raise ValueError(f"masked_fill: mask of shape {mask.shape} does not broadcast to the tensor's shape {a.shape}")
""", ""),
]

BUGS["01"] += [
    Bug("flatten-end-exclusive", "flatten's end_dim is exclusive, like a Python slice", "shape-ops",
        "    out = a.data.reshape(shape[:start] + (-1,) + shape[end + 1:])",
        "    out = a.data.reshape(shape[:start] + (-1,) + shape[end:])"),
    Bug("expand-minus-one-to-numpy", "expand's -1 is handed to numpy, which does not accept it", "shape-ops",
        "    shape = tuple(a.shape[i - lead] if n == -1 and i >= lead else n for i, n in enumerate(shape))\n", ""),
    Bug("abs-by-negation", "abs negates every element instead of the negative ones", "elementwise",
        "    out = np.abs(a.data)", "    out = -a.data"),
]

BUGS["01"] += [  # so that every exercise has at least three (the blame table, test_blame_table.py)
    Bug("python-ints-stay-int", "Python ints stay int64 (only floats become float32)", "as-array",
        '        if dtype is None and arr.dtype.kind in "iuf":', '        if dtype is None and arr.dtype.kind == "f":'),
    Bug("broadcast-equal-shapes-only", "only equal shapes are accepted: no broadcasting at all", "broadcast-check",
        """    if a.shape != b.shape:
        try:
            np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise""", """    if a.shape != b.shape:
        try:
            raise ValueError
        except ValueError:
            raise"""),
    Bug("broadcast-error-unnamed", "the shape error names neither the op nor the shapes", "broadcast-check",
        '            raise ValueError(f"{op}: shapes {a.shape} and {b.shape} do not broadcast") from None',
        '            raise ValueError("shapes do not broadcast") from None'),
    Bug("sub-reversed", "a - b computes b - a", "arithmetic", "    out = a.data - b.data", "    out = b.data - a.data"),
    Bug("div-floors", "division floors (//), as integer division does", "arithmetic",
        "    out = a.data / b.data", "    out = a.data // b.data"),
    Bug("neg-forgets-minus", "neg copies a and forgets the minus sign", "arithmetic",
        '    out = -a.data\n    ### END SOLUTION\n    return _result(out, "neg"',
        '    out = a.data.copy()\n    ### END SOLUTION\n    return _result(out, "neg"'),
    Bug("log-base-10", "log is the base-10 logarithm", "elementwise", "    out = np.log(a.data)", "    out = np.log10(a.data)"),
    Bug("tanh-by-exp-overflows", "tanh from exponentials, which gives nan for large inputs", "elementwise",
        "    out = np.tanh(a.data)", "    out = (np.exp(2 * a.data) - 1) / (np.exp(2 * a.data) + 1)"),
    Bug("masked-fill-inverted", "masked_fill keeps the values where the mask is True and fills the others",
        "indexing", "    out = np.where(mask, np.asarray(_data(value), dtype=a.dtype), a.data)",
        "    out = np.where(mask, a.data, np.asarray(_data(value), dtype=a.dtype))"),
]

BUGS["02"] = [
    Bug("abs-grad-one", "the gradient of |a| is taken as 1 everywhere", "elementwise-gradients",
        "    return (grad * np.sign(a.data),)", "    return (grad,)"),
    Bug("flatten-grad-to-output-shape", "flatten's gradient is reshaped to the output's shape", "shape-gradients",
        "    return (grad.reshape(a.shape),)\n    ### END SOLUTION\n\n\n@register_gradient(\"broadcast_to\")",
        "    return (grad.reshape(out.shape),)\n    ### END SOLUTION\n\n\n@register_gradient(\"broadcast_to\")"),
    Bug("broadcast-grad-not-summed", "broadcast_to's gradient passes the upstream gradient through unsummed",
        "shape-gradients", "    return (unbroadcast(grad, a.shape),)", "    return (grad,)"),
    Bug("mean-grad-last-axis", "the mean's gradient divides by the length of the last axis", "reduction-gradients",
        "    count = a.size // max(out.size, 1) if a.size else 1", "    count = a.shape[-1]"),
    Bug("mean-grad-first-axis-only", "the mean's gradient divides by the first reduced axis's length only",
        "reduction-gradients", "    count = a.size // max(out.size, 1) if a.size else 1",
        "    count = a.size if axis is None else a.shape[axis[0]]"),
    Bug("sum-grad-not-expanded", "sum's gradient is broadcast without putting the reduced axes back",
        "reduction-gradients", "    return (np.broadcast_to(_expand_reduced(grad, axis, keepdims, a.ndim), a.shape),)",
        "    return (np.broadcast_to(grad, a.shape),)"),
    Bug("max-ties-not-split", "max sends the whole gradient to every tied maximum", "reduction-gradients",
        "    share = winners / winners.sum(axis=axis, keepdims=True)", "    share = winners"),
    Bug("matmul-grad-b-transposed", "matmul's gradient for B is grad.T @ A instead of A.T @ grad", "matmul-gradient",
        "        grad_b = A.reshape(-1, A.shape[-1]).T @ flat_grad", "        grad_b = flat_grad.T @ A.reshape(-1, A.shape[-1])"),
    Bug("div-grad-sign", "the divisor's gradient of a / b lost its minus sign", "arithmetic-gradients",
        "    return grad_a, -grad_a * out.data", "    return grad_a, grad_a * out.data"),
    Bug("pow-grad-at-zero", "x ** 0 at x = 0 gets the gradient 0 * 0 ** -1 = nan", "elementwise-gradients",
        "        grad_a = grad * np.where(b.data == 0, 0, b.data * a.data ** (b.data - 1))",
        "        grad_a = grad * b.data * a.data ** (b.data - 1)"),
    Bug("getitem-grad-assigns", "getitem's gradient assigns (g[index] = grad): a repeated index counts once",
        "shape-gradients", "    np.add.at(grad_a, index, grad)", "    grad_a[index] = grad"),
    Bug("unbroadcast-drops-axes", "unbroadcast sums the stretched axes without keepdims", "unbroadcast",
        "        grad = grad.sum(axis=stretched, keepdims=True)", "        grad = grad.sum(axis=stretched)"),
    Bug("no-unbroadcast", "backward never unbroadcasts: a broadcast input gets the output-shaped gradient",
        "backward", "            g = unbroadcast(np.asarray(g), x.shape)", "            g = np.asarray(g)"),
    Bug("grads-overwritten", "a second path's gradient overwrites the first instead of adding to it", "backward",
        "            grads[id(x)] = grads[id(x)] + g if id(x) in grads else g", "            grads[id(x)] = g"),
    Bug("visited-on-push", "the graph walk marks a tensor visited when it is pushed, not when it is expanded",
        "backward",
        """        if id(tensor) in visited:  # reached again through another path: already placed
            continue
        visited.add(id(tensor))
        stack.append((tensor, True))
        node = getattr(tensor, "_node", None)
        if node is not None:
            stack.extend((x, False) for x in node.inputs if x.requires_grad and id(x) not in visited)""",
        """        stack.append((tensor, True))
        node = getattr(tensor, "_node", None)
        if node is not None:
            for x in node.inputs:
                if x.requires_grad and id(x) not in visited:
                    visited.add(id(x))
                    stack.append((x, False))"""),
]
BUGS["02"] += [
    Bug("max-grad-float64", "max's gradient turns the winners mask into float64 (astype(float))",
        "reduction-gradients", "    winners = (a.data == _expand_reduced(out.data, axis, keepdims, a.ndim)).astype(a.dtype)",
        "    winners = (a.data == _expand_reduced(out.data, axis, keepdims, a.ndim)).astype(float)"),
    Bug("permute-grad-same-order", "permute's gradient applies dims again instead of their inverse",
        "shape-gradients", "    return (np.transpose(grad, np.argsort(dims)),)", "    return (np.transpose(grad, dims),)"),
]

BUGS["02"] += [  # so that every exercise has at least three (the blame table, test_blame_table.py)
    Bug("sub-grad-both-plus", "sub's gradient is +grad for both inputs", "arithmetic-gradients",
        "    return grad, -grad", "    return grad, grad"),
    Bug("mul-grad-own-input", "mul's gradients multiply by each input's own value", "arithmetic-gradients",
        "    return grad * b.data, grad * a.data", "    return grad * a.data, grad * b.data"),
    Bug("log-grad-times-a", "log's gradient multiplies by a instead of dividing", "elementwise-gradients",
        "    return (grad / a.data,)", "    return (grad * a.data,)"),
    Bug("matmul-grad-a-not-transposed", "matmul's gradient for A uses B, not B transposed (square B hides it)",
        "matmul-gradient", "        grad_a = grad @ np.swapaxes(B, -1, -2)", "        grad_a = grad @ B"),
    Bug("matmul-grad-vector-keeps-axis", "a 1-D B's gradient keeps the added axis", "matmul-gradient",
        "    if b.ndim == 1:\n        grad_b = grad_b[..., 0]\n", ""),
    Bug("unbroadcast-no-leading-sum", "unbroadcast never sums the added leading axes", "unbroadcast",
        "    if extra > 0:\n        grad = grad.sum(axis=tuple(range(extra)))\n", ""),
    Bug("unbroadcast-copies", "unbroadcast returns a copy when the shapes already match", "unbroadcast",
        "    if grad.shape == shape:\n        return grad\n", "    if grad.shape == shape:\n        return grad.copy()\n"),
]

BUGS["03"] = [
    Bug("softmax-no-max-shift", "softmax exponentiates the logits without subtracting the row maximum", "softmax",
        "    e = np.exp(x.data - x.data.max(axis=axis, keepdims=True))", "    e = np.exp(x.data)"),
    Bug("log-of-softmax", "log_softmax is the log of the softmax", "softmax",
        """    shifted = x.data - x.data.max(axis=axis, keepdims=True)
    out = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))""",
        """    e = np.exp(x.data - x.data.max(axis=axis, keepdims=True))
    out = np.log(e / e.sum(axis=axis, keepdims=True))"""),
    Bug("gelu-derivative-wrong", "GELU's derivative drops the 3 of d(x³)/dx", "activations",
        "    du_dx = _GELU_C * (1 + 3 * 0.044715 * v * v)", "    du_dx = _GELU_C * (1 + 0.044715 * v * v)"),
    Bug("relu-grad-at-zero", "ReLU passes the gradient at x = 0 (x >= 0)", "activations",
        "    return (grad * (x.data > 0),)", "    return (grad * (x.data >= 0),)"),
    Bug("naive-sigmoid", "sigmoid is 1 / (1 + exp(-x)), which overflows for x = -1e4", "activations",
        """    z = np.exp(-np.abs(x.data))
    out = np.where(x.data >= 0, 1, z) / (1 + z)""", "    out = 1 / (1 + np.exp(-x.data))"),
    Bug("layer-norm-no-eps", "layer norm divides by the standard deviation without eps", "layer-norm",
        "    rstd = 1.0 / np.sqrt(var + eps)", "    rstd = 1.0 / np.sqrt(var)"),
    Bug("layer-norm-unbiased-var", "layer norm's variance divides by d - 1", "layer-norm",
        "    var = ((x.data - mu) ** 2).mean(axis=-1, keepdims=True)",
        "    var = ((x.data - mu) ** 2).sum(axis=-1, keepdims=True) / (x.shape[-1] - 1)"),
    Bug("layer-norm-grad-no-xhat-term", "layer norm's input gradient forgets the x̂ · mean(ĝ ⊙ x̂) term",
        "layer-norm", "    grad_x = rstd * (g_xhat - mean_g - xhat * mean_gx)", "    grad_x = rstd * (g_xhat - mean_g)"),
    Bug("embedding-grad-assigns", "the embedding gradient assigns rows (a repeated id counts once)", "embedding",
        "        grad_w[unique] = np.add.reduceat(rows, starts, axis=0)", "        grad_w[flat[order]] = rows"),
    Bug("dropout-scales-down", "dropout multiplies the survivors by 1 - p instead of dividing", "dropout",
        "        return x * Tensor((keep / (1.0 - self.p)).astype(x.dtype))",
        "        return x * Tensor((keep * (1.0 - self.p)).astype(x.dtype))"),
    Bug("walk-lists-shared-twice", "a parameter shared by two attributes is listed twice", "module",
        """                if id(obj) in seen:
                    continue
                seen.add(id(obj))""", """                if isinstance(obj, Module) and id(obj) in seen:
                    continue
                seen.add(id(obj))"""),
]

BUGS["03"] += [  # so that every exercise has at least three (the blame table, test_blame_table.py)
    Bug("walk-skips-lists", "the walk does not look inside lists and tuples", "module",
        "            elif isinstance(obj, (list, tuple)):\n                children = list(enumerate(obj))\n", ""),
    Bug("walk-skips-dicts", "the walk does not look inside dicts", "module",
        "            elif isinstance(obj, dict):\n                children = list(obj.items())\n", ""),
    Bug("linear-forgets-bias", "linear never adds the bias", "linear",
        "    if bias is not None:\n        out = out + bias.data\n", ""),
    Bug("linear-bias-grad-mean", "the bias gradient averages the rows instead of summing them", "linear",
        "rows.sum(axis=0))", "rows.mean(axis=0))"),
    Bug("linear-init-fan-out", "the bias bound uses out_features (fan-out) instead of in_features", "linear",
        "        bound = 1.0 / math.sqrt(in_features)", "        bound = 1.0 / math.sqrt(out_features)"),
    Bug("softmax-grad-no-rowsum", "softmax's gradient forgets to subtract the row sum of grad·s", "softmax",
        "    return (s * (grad - (grad * s).sum(axis=axis, keepdims=True)),)", "    return (s * grad,)"),
    Bug("embedding-grad-rows-unsorted", "the rows of the gradient are not put in the order of the sorted ids",
        "embedding", "        rows = grad.reshape(-1, grad.shape[-1])[order]", "        rows = grad.reshape(-1, grad.shape[-1])"),
    Bug("embedding-grad-first-only", "a repeated id gets the gradient of its first occurrence only", "embedding",
        "        grad_w[unique] = np.add.reduceat(rows, starts, axis=0)", "        grad_w[unique] = rows[starts]"),
    Bug("dropout-keeps-p", "dropout keeps a fraction p of the elements instead of dropping it", "dropout",
        "        keep = rng.random(x.shape) >= self.p", "        keep = rng.random(x.shape) < self.p"),
    Bug("dropout-no-rescale", "dropout zeroes elements but does not scale the survivors", "dropout",
        "        return x * Tensor((keep / (1.0 - self.p)).astype(x.dtype))",
        "        return x * Tensor(keep.astype(x.dtype))"),
]

BUGS["04"] = [
    Bug("ce-sums", "cross-entropy sums over positions instead of averaging", "cross-entropy",
        "    loss = -picked[keep].mean()", "    loss = -picked[keep].sum()"),
    Bug("ce-no-max-shift", "cross-entropy's log-sum-exp forgets to subtract the maximum", "cross-entropy",
        "    shifted = z - z.max(axis=-1, keepdims=True)", "    shifted = z"),
    Bug("ce-grad-not-averaged", "cross-entropy's gradient is softmax − onehot, not divided by N", "cross-entropy",
        "    return (d_logits.reshape(logits.shape) * (grad / int(keep.sum())),)",
        "    return (d_logits.reshape(logits.shape) * grad,)"),
    Bug("ce-ignore-averages-all", "with ignore_index the loss still averages over every position", "cross-entropy",
        "    loss = -picked[keep].mean()", "    loss = -(picked * keep).sum() / picked.size"),
    Bug("mse-sums", "mse_loss sums the squared errors", "mse-loss",
        "    return (diff * diff).mean()", "    return (diff * diff).sum()"),
    Bug("sgd-textbook-momentum", "SGD's velocity is μv + (1 − μ)g, not PyTorch's μv + g", "sgd",
        """                state["momentum"] *= self.momentum
                state["momentum"] += grad""",
        """                state["momentum"] *= self.momentum
                state["momentum"] += (1 - self.momentum) * grad"""),
    Bug("adam-no-bias-correction", "Adam without bias correction", "adam",
        """        m_hat = m / (1 - beta1 ** t)                      # bias correction
        v_hat = v / (1 - beta2 ** t)""", """        m_hat = m
        v_hat = v"""),
    Bug("adam-v-not-squared", "Adam's second moment averages the gradient, not its square", "adam",
        "        v[...] = beta2 * v + (1 - beta2) * grad * grad", "        v[...] = beta2 * v + (1 - beta2) * np.abs(grad)"),
    Bug("adamw-decay-after-step", "AdamW shrinks the weights after the Adam step instead of before", "adamw",
        """        param *= 1 - self.lr * self.weight_decay
        self.adam_step(param, grad, state)""", """        self.adam_step(param, grad, state)
        param *= 1 - self.lr * self.weight_decay"""),
    Bug("clip-per-parameter", "clip_grad_norm_ clips each parameter's gradient on its own", "clip-grad-norm",
        """    total_norm = math.sqrt(sum(float(np.linalg.norm(g)) ** 2 for g in grads))
    scale = max_norm / (total_norm + 1e-6)
    if scale < 1:
        for g in grads:
            g *= scale""", """    total_norm = math.sqrt(sum(float(np.linalg.norm(g)) ** 2 for g in grads))
    for g in grads:
        scale = max_norm / (float(np.linalg.norm(g)) + 1e-6)
        if scale < 1:
            g *= scale"""),
    Bug("warmup-off-by-one", "the warmup starts at 0 (step / warmup_steps) instead of 1 / warmup_steps",
        "lr-schedule", "        return base_lr * (step + 1) / warmup_steps", "        return base_lr * step / warmup_steps"),
]

BUGS["04"] += [
    Bug("bce-logits-naive", "binary cross-entropy with logits as log(sigmoid(x)): -inf far out", "binary-cross-entropy",
        "    softplus_neg = np.maximum(-z, 0) + np.log1p(np.exp(-np.abs(z)))     # -log sigmoid(z), never overflows",
        "    softplus_neg = -np.log(1 / (1 + np.exp(-z)))"),
    Bug("bce-pos-weight-on-negatives", "pos_weight scales the negative term instead of the positive one",
        "binary-cross-entropy", "    loss = (1 - y) * z + scale * softplus_neg",
        "    loss = scale * (1 - y) * z + softplus_neg"),
    Bug("bce-no-clamp", "the logs of binary_cross_entropy are not clamped at -100", "binary-cross-entropy",
        "        log_p, log_q = np.maximum(np.log(p.data), -100), np.maximum(np.log1p(-p.data), -100)",
        "        log_p, log_q = np.log(p.data), np.log1p(-p.data)"),
]

BUGS["04"] += [  # so that every exercise has at least three (the blame table, test_blame_table.py)
    Bug("mse-abs", "mse_loss averages the absolute errors", "mse-loss",
        "    return (diff * diff).mean()", "    return abs(diff).mean()"),
    Bug("mse-root", "mse_loss takes the root of the mean square (RMSE)", "mse-loss",
        "    return (diff * diff).mean()", "    return (diff * diff).mean().sqrt()"),
    Bug("sgd-decay-after-momentum", "SGD adds the weight decay after the momentum", "sgd",
        """        if self.weight_decay:
            grad = grad + self.weight_decay * param
        if self.momentum:""", """        if self.momentum:"""),
    Bug("sgd-momentum-first-scaled", "the momentum buffer starts at (1 − μ)·g (an average) instead of g", "sgd",
        '                state["momentum"] = grad.copy()', '                state["momentum"] = (1 - self.momentum) * grad'),
    Bug("adam-eps-inside-sqrt", "eps goes inside the square root", "adam",
        "        param -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)",
        "        param -= self.lr * m_hat / np.sqrt(v_hat + self.eps)"),
    Bug("adamw-decay-without-lr", "AdamW shrinks the weights by weight_decay, not lr · weight_decay", "adamw",
        "        param *= 1 - self.lr * self.weight_decay", "        param *= 1 - self.weight_decay"),
    Bug("adamw-decay-through-gradient", "AdamW adds the decay to the gradient (Adam's L2), not to the weights",
        "adamw", """        param *= 1 - self.lr * self.weight_decay
        self.adam_step(param, grad, state)""", """        self.adam_step(param, grad + self.weight_decay * param, state)"""),
    Bug("clip-always-scales", "clip_grad_norm_ scales even when the norm is below max_norm", "clip-grad-norm",
        "    if scale < 1:\n        for g in grads:\n            g *= scale",
        "    if True:\n        for g in grads:\n            g *= scale"),
    Bug("clip-l1-norm", "the total norm adds the parameters' norms instead of their squares", "clip-grad-norm",
        "    total_norm = math.sqrt(sum(float(np.linalg.norm(g)) ** 2 for g in grads))",
        "    total_norm = sum(float(np.linalg.norm(g)) for g in grads)"),
    Bug("cosine-over-total", "the cosine's progress counts from step 0, not from the end of warmup", "lr-schedule",
        "    progress = (step - warmup_steps) / (total_steps - warmup_steps)", "    progress = step / total_steps"),
    Bug("cosine-to-zero", "the cosine decays to 0, not to min_lr", "lr-schedule",
        "    return min_lr + 0.5 * (base_lr - min_lr) * (1 + math.cos(math.pi * progress))",
        "    return 0.5 * base_lr * (1 + math.cos(math.pi * progress))"),
]

BUGS["05"] = [
    Bug("causal-off-by-one", "the causal mask blocks the diagonal too (j < i instead of j <= i)", "masks",
        "    return np.arange(n_keys)[None, :] <= np.arange(seq_len)[:, None] + offset",
        "    return np.arange(n_keys)[None, :] < np.arange(seq_len)[:, None] + offset"),
    Bug("causal-ignores-offset", "the causal mask ignores the offset of cached keys", "masks",
        "    return np.arange(n_keys)[None, :] <= np.arange(seq_len)[:, None] + offset",
        "    return np.arange(n_keys)[None, :] <= np.arange(seq_len)[:, None]"),
    Bug("padding-mask-inverted", "the padding mask is True on the padding (PyTorch MHA's polarity)", "masks",
        "    return (np.arange(max_length)[None, :] < lengths[:, None])[:, None, None, :]",
        "    return (np.arange(max_length)[None, :] >= lengths[:, None])[:, None, None, :]"),
    Bug("softmax-no-max-shift", "the masked softmax exponentiates the scores without subtracting the row maximum",
        "attention-forward", """    row_max = scores.max(axis=-1, keepdims=True, initial=-np.inf)
    row_max = np.where(row_max == -np.inf, 0, row_max)  # fully blocked row: exp(-inf - 0) = 0, not exp(nan)
    e = np.exp(scores - row_max)""", "    e = np.exp(scores)"),
    Bug("softmax-max-of-no-keys", "the row maximum has no initial value, so a query with no keys fails",
        "attention-forward", "    row_max = scores.max(axis=-1, keepdims=True, initial=-np.inf)",
        "    row_max = scores.max(axis=-1, keepdims=True)"),
    Bug("no-scale", "the scores are not divided by √d_k", "attention-forward",
        "    scores = (Q.data * scale) @ np.swapaxes(K.data, -1, -2)  # scaling Q costs n·d_k, scaling S would cost n·m",
        "    scores = Q.data @ np.swapaxes(K.data, -1, -2)"),
    Bug("grad-no-rowsum", "the softmax part of the backward forgets rowsum(dP ⊙ P)", "attention-backward",
        "    d_scores = weights * (d_weights - row_dot)                                 # dS",
        "    d_scores = weights * d_weights"),
    Bug("heads-split-wrong-order", "the heads are split with one reshape to (B, H, n, E/H), without the transpose",
        "multi-head-attention", "        return x.reshape(B, n, self.num_heads, self.head_dim).transpose(1, 2)",
        "        return x.reshape(B, self.num_heads, n, self.head_dim)"),
    Bug("heads-merged-wrong-order", "the heads are merged with one reshape to (B, n, E), without the transpose",
        "multi-head-attention", "        return x.transpose(1, 2).reshape(B, n, self.embed_dim)",
        "        return x.reshape(B, n, self.embed_dim)"),
    Bug("cache-result-dropped", "the KV cache is updated but the queries attend to the new keys only",
        "multi-head-attention", "            k, v = cache.update(k, v)", "            cache.update(k, v)"),
    Bug("online-softmax-no-rescale", "the online softmax does not rescale the running sum of values",
        "memory-efficient", "            acc *= rescale\n", ""),
]

BUGS["05"] += [  # so that every exercise has at least three (the blame table, test_blame_table.py)
    Bug("backward-dv-not-transposed", "dV is P @ dO instead of Pᵀ @ dO (square when n = m)", "attention-backward",
        "    dV = np.swapaxes(weights, -1, -2) @ grad if V.requires_grad else None",
        "    dV = weights @ grad if V.requires_grad else None"),
    Bug("backward-rowsum-of-dp", "the row sum is taken over dP alone, not dP ⊙ P", "attention-backward",
        "    row_dot = np.sum(grad * out.data, axis=-1, keepdims=True)",
        "    row_dot = np.sum(grad @ np.swapaxes(V.data, -1, -2), axis=-1, keepdims=True)"),
    Bug("self-attention-k-from-q", "the keys are made with the query projection", "self-attention",
        "scaled_dot_product_attention(self.q_proj(x), self.k_proj(x), self.v_proj(x), mask)",
        "scaled_dot_product_attention(self.q_proj(x), self.q_proj(x), self.v_proj(x), mask)"),
    Bug("self-attention-values-unprojected", "the values are the input itself, not v_proj(x)", "self-attention",
        "scaled_dot_product_attention(self.q_proj(x), self.k_proj(x), self.v_proj(x), mask)",
        "scaled_dot_product_attention(self.q_proj(x), self.k_proj(x), x, mask)"),
    Bug("self-attention-mask-dropped", "the mask is not passed on", "self-attention",
        "scaled_dot_product_attention(self.q_proj(x), self.k_proj(x), self.v_proj(x), mask)",
        "scaled_dot_product_attention(self.q_proj(x), self.k_proj(x), self.v_proj(x), None)"),
    Bug("lsh-one-sided", "the hash takes the argmax of the rotations only, not of [r, −r]", "lsh-buckets",
        "    return np.argmax(np.concatenate([rotated, -rotated], axis=-1), axis=-1)",
        "    return np.argmax(np.concatenate([rotated, rotated], axis=-1), axis=-1)"),
    Bug("lsh-unseeded", "the rotations ignore the seed", "lsh-buckets",
        "    rng = np.random.default_rng(seed)", "    rng = np.random.default_rng()"),
    Bug("lsh-rotations-full-buckets", "the rotations have n_buckets columns, so the hash has 2·n_buckets buckets",
        "lsh-buckets", "    rotations = rng.standard_normal((x.shape[-1], n_hashes, n_buckets // 2)).astype(x.dtype)",
        "    rotations = rng.standard_normal((x.shape[-1], n_hashes, n_buckets)).astype(x.dtype)"),
    Bug("online-softmax-sum-not-rescaled", "the running sum is not rescaled when the maximum grows", "memory-efficient",
        "            row_sum = row_sum * rescale + p.sum(axis=-1, keepdims=True)",
        "            row_sum = row_sum + p.sum(axis=-1, keepdims=True)"),
    Bug("online-softmax-max-not-kept", "the running maximum is never updated", "memory-efficient",
        "            row_max = new_max\n", ""),
]

BUGS["06"] = [
    Bug("vocab-unsorted", "the vocabulary is the set of characters in set order, not sorted", "char-tokenizer",
        "        self.chars = sorted(set(text))", "        self.chars = list(set(text))"),
    Bug("batch-window-overruns", "get_batch draws one start too many: the last window's target runs off the data",
        "get-batch", "    starts = rng.integers(0, len(data) - block_size, size=batch_size)",
        "    starts = rng.integers(0, len(data) - block_size + 1, size=batch_size)"),
    Bug("mlp-no-gelu", "the MLP forgets its activation", "mlp",
        "        return self.dropout(self.proj(self.act(self.fc(x))))", "        return self.dropout(self.proj(self.fc(x)))"),
    Bug("block-post-ln", "the block normalises after the residual sum (post-LN) instead of before the branch",
        "transformer-block", """        x = x + self.dropout(self.attn(self.ln1(x), mask=mask, cache=cache))
        return x + self.mlp(self.ln2(x))""", """        x = self.ln1(x + self.dropout(self.attn(x, mask=mask, cache=cache)))
        return self.ln2(x + self.mlp(x))"""),
    Bug("no-final-layer-norm", "the GPT builds ln_f but never applies it", "gpt",
        "        x = self.ln_f(x)\n", ""),
    Bug("positions-ignore-cache", "with a KV cache the new tokens get positions 0, 1, ... again", "gpt",
        "        positions = self.position_ids(idx.shape, offset, mask)",
        "        positions = self.position_ids(idx.shape, 0, mask)"),
    Bug("temperature-multiplies", "sampling multiplies the logits by the temperature", "generate",
        "    logits = logits / temperature", "    logits = logits * temperature"),
    Bug("cache-past-the-context", "generation keeps feeding the cache past max_seq_len instead of rebuilding it",
        "generate", "                if use_cache and caches is not None and idx.shape[1] <= self.max_seq_len:",
        "                if use_cache and caches is not None:"),
]

BUGS["06"] += [  # so that every exercise has at least three (the blame table, test_blame_table.py)
    Bug("decode-no-range-check", "decode lets a negative id through (Python reads it from the end)", "char-tokenizer",
        "        bad = ids[(ids < 0) | (ids >= self.vocab_size)]", "        bad = ids[ids >= self.vocab_size]"),
    Bug("encode-skips-unknown", "encode drops characters outside the vocabulary instead of refusing them",
        "char-tokenizer", "            return [self.stoi[ch] for ch in text]",
        "            return [self.stoi[ch] for ch in text if ch in self.stoi]"),
    Bug("targets-not-shifted", "the targets are the inputs themselves, not shifted by one", "get-batch",
        "    return data[window], data[window + 1]", "    return data[window], data[window]"),
    Bug("batch-ignores-rng", "get_batch draws from a new generator, not the one it is given", "get-batch",
        "    starts = rng.integers(0, len(data) - block_size, size=batch_size)",
        "    starts = np.random.default_rng().integers(0, len(data) - block_size, size=batch_size)"),
    Bug("batch-starts-fixed", "get_batch never draws: its starts are 0, 1, 2, ... whatever the generator", "get-batch",
        "    starts = rng.integers(0, len(data) - block_size, size=batch_size)",
        "    starts = np.arange(batch_size) % (len(data) - block_size)"),
    Bug("mlp-hidden-is-embed", "the hidden layer is embed_dim wide, not hidden_dim", "mlp",
        "        self.fc = Linear(embed_dim, hidden_dim)\n        self.act = GELU()\n        self.proj = Linear(hidden_dim, embed_dim)",
        "        self.fc = Linear(embed_dim, embed_dim)\n        self.act = GELU()\n        self.proj = Linear(embed_dim, embed_dim)"),
    Bug("mlp-act-last", "the MLP applies GELU after the second Linear instead of between the two", "mlp",
        "        return self.dropout(self.proj(self.act(self.fc(x))))", "        return self.dropout(self.act(self.proj(self.fc(x))))"),
    Bug("block-no-attention-residual", "the attention branch replaces x instead of adding to it", "transformer-block",
        "        x = x + self.dropout(self.attn(self.ln1(x), mask=mask, cache=cache))",
        "        x = self.dropout(self.attn(self.ln1(x), mask=mask, cache=cache))"),
    Bug("block-shared-layer-norm", "both branches use ln1", "transformer-block",
        "        return x + self.mlp(self.ln2(x))", "        return x + self.mlp(self.ln1(x))"),
    Bug("gpt-untied-head-uses-embedding", "the logits always come from the token embedding, head or not", "gpt",
        "        if self.lm_head is None:\n            return x @ self.token_embedding.weight.transpose()\n",
        "        return x @ self.token_embedding.weight.transpose()\n"),
    Bug("top-k-keeps-one-more", "top-k keeps the k + 1 largest logits", "generate",
        "        kth = np.sort(logits, axis=-1)[:, -top_k][:, None]", "        kth = np.sort(logits, axis=-1)[:, -top_k - 1][:, None]"),
]

BUGS["07"] = [  # from the module 07 author's list, each re-checked here
    Bug("compare-same-order", "every block runs the functions in the same order", "compare",
        "        for name in names if block % 2 == 0 else names[::-1]:", "        for name in names:"),
    Bug("linear-no-bias", "the fused linear never adds the bias", "fast-linear",
        "    if bias is not None:\n        out += bias.data\n    return _result", "    return _result"),
    Bug("layer-norm-uncentred-variance", "the variance is the mean of x² rather than of (x − μ)²", "fast-layer-norm",
        "    rstd = 1.0 / np.sqrt(_row_mean(centred * centred) + eps)",
        "    rstd = 1.0 / np.sqrt(_row_mean(x.data * x.data) + eps)"),
    Bug("layer-norm-grad-no-xhat-term", "the layer norm backward forgets the term along x̂", "fast-layer-norm",
        "    grad_x -= xhat * _row_mean(g_times_xhat, weight.data)     # mean(ĝ ⊙ x̂) = mean(g ⊙ x̂ ⊙ γ)\n", ""),
    Bug("drain-one-piece", "each thread takes one piece and stops", "drain",
        """    while True:
        try:
            index, piece = queue.popleft()  # thread-safe: each piece is taken by exactly one thread
        except IndexError:
            return
        results[index] = fn(piece)""", """    try:
        index, piece = queue.popleft()
    except IndexError:
        return
    results[index] = fn(piece)"""),
    Bug("gelu-grad-no-upstream", "the GELU chunk's backward forgets the upstream gradient", "gelu-chunk",
        "    out *= s\n    out *= grad\n", "    out *= s\n"),
    Bug("attention-mask-ignored", "the blocked softmax ignores the mask", "fast-attention",
        "            block[...] = softmax(block, None if mask_bias is None else mask_bias[block_rows])",
        "            block[...] = softmax(block, None)"),
    Bug("attention-dk-assigned", "each row block's dK replaces the sum instead of adding to it", "fast-attention-backward",
        "                _matmul_into(np.swapaxes(d_scores, -1, -2), q[block_rows], dK[index], add=later)",
        "                _matmul_into(np.swapaxes(d_scores, -1, -2), q[block_rows], dK[index], add=False)"),
    Bug("attention-first-block-adds", "the first row block adds into dK and dV, which hold no zeros",
        "fast-attention-backward", "            later = rows.start > 0", "            later = True"),
]

BUGS["07"] += [  # so that every exercise has at least three (the blame table, test_blame_table.py)
    Bug("compare-ratio-inverted", "the ratio is the first function's median over this one's", "compare",
        "        ratio = float(median) / first if first else math.nan",
        "        ratio = first / float(median) if median else math.nan"),
    Bug("compare-no-warmup", "the warm-up calls are left out", "compare",
        """    for name in names:
        for _ in range(warmup):
            fns[name]()
""", ""),
    Bug("linear-bias-grad-wrong-axis", "the bias gradient sums each row instead of each column", "fast-linear",
        "(grad_x, grad_w, _column_sum(rows))", "(grad_x, grad_w, rows.sum(axis=-1))"),
    Bug("linear-grad-w-not-flattened", "the weight gradient uses x as it is, not its rows flattened", "fast-linear",
        "    grad_w = x.data.reshape(-1, x.shape[-1]).T @ rows", "    grad_w = np.swapaxes(x.data, -1, -2) @ grad"),
    Bug("layer-norm-grad-no-rstd", "the layer norm backward forgets the factor 1/σ", "fast-layer-norm",
        "    grad_x *= rstd\n", ""),
    Bug("drain-appends", "results are appended in the order the threads finish, not stored at their index", "drain",
        "        results[index] = fn(piece)", "        results.append(fn(piece))"),
    Bug("drain-swallows-errors", "any error of fn ends the thread quietly, as an empty queue does", "drain",
        "        except IndexError:\n            return\n        results[index] = fn(piece)",
        "            results[index] = fn(piece)\n        except Exception:\n            return"),
    Bug("gelu-chunk-sigma-of-u", "GELU as v·σ(u) rather than v·σ(2u)", "gelu-chunk",
        "    s *= -2 * _GELU_C * 0.044715\n    s -= 2 * _GELU_C", "    s *= -_GELU_C * 0.044715\n    s -= _GELU_C"),
    Bug("gelu-grad-cubic-coefficient", "du/dv forgets the 3 from the derivative of v³", "gelu-chunk",
        "    out *= 2 * _GELU_C * 3 * 0.044715", "    out *= 2 * _GELU_C * 0.044715"),
    Bug("attention-mask-after-softmax", "the mask zeroes weights after the softmax, so rows no longer sum to 1",
        "fast-attention",
        "            block[...] = softmax(block, None if mask_bias is None else mask_bias[block_rows])",
        "            block[...] = softmax(block, None)\n"
        "            if mask_bias is not None:\n                block[mask_bias[block_rows] < 0] = 0"),
    Bug("attention-values-before-softmax", "the block is multiplied by V before its softmax", "fast-attention",
        """            block[...] = softmax(block, None if mask_bias is None else mask_bias[block_rows])
            np.matmul(block, v[index], out=output[block_rows])""",
        """            np.matmul(block, v[index], out=output[block_rows])
            block[...] = softmax(block, None if mask_bias is None else mask_bias[block_rows])"""),
    Bug("attention-dv-untransposed", "dV is P·dO instead of Pᵀ·dO", "fast-attention-backward",
        "                _matmul_into(np.swapaxes(p, -1, -2), d_out, dV[index], add=later)",
        "                _matmul_into(p, d_out, dV[index], add=later)"),
    Bug("attention-ds-no-rowsum", "the softmax backward forgets to subtract rowsum(dP ⊙ P)", "fast-attention-backward",
        "            d_scores -= row_dot[block_rows]\n", ""),
]

BUGS["08"] = [  # from the module 07 author's list (its compiled loops and switch are module 08's now)
    Bug("compiled-layer-norm-one-pass-variance", "the compiled layer norm takes the variance as E[x²] − E[x]²",
        "compiled-layer-norm-loops",
        "        rstd[r] = 1.0 / math.sqrt(_dot(out[r], out[r]) / d + eps)",
        "        rstd[r] = 1.0 / math.sqrt(_dot(x[r], x[r]) / d - mean[r] * mean[r] + eps)"),
    Bug("compiled-layer-norm-shared-sums", "every part of the rows adds its column sums into part 0",
        "compiled-layer-norm-loops", "                sums[p, 0, j] += grad[r, j] * xhat[j]\n                sums[p, 1, j] += grad[r, j]",
        "                sums[0, 0, j] += grad[r, j] * xhat[j]\n                sums[0, 1, j] += grad[r, j]"),
    Bug("compiled-gelu-grad-no-one-minus-s", "the GELU backward loop forgets the factor (1 − s)", "compiled-gelu-loops",
        "(one + v * (one - s) * two_c", "(one + v * two_c"),
    Bug("compiled-gelu-grad-nan-at-zero", "the GELU backward loop reads s = y / v back even at v = 0 (0/0)",
        "compiled-gelu-loops", "        s = y[i] / v if abs(v) > tiny else half\n", "        s = y[i] / v\n"),
    Bug("compiled-gelu-grad-subnormal", "the GELU backward loop reads s = y / v back for a subnormal v, where y has no "
        "digits left", "compiled-gelu-loops", "        s = y[i] / v if abs(v) > tiny else half\n",
        "        s = y[i] / v if v != 0 else half\n"),
    Bug("compiled-gelu-loop-not-compiled", "the GELU backward loop is left to Python (right values, no @compiled)",
        "compiled-gelu-loops", "@compiled\ndef _gelu_backward_loop(", "def _gelu_backward_loop("),
    Bug("compiled-cross-entropy-ignores-keep", "the cross-entropy backward loop sends gradient to ignored rows",
        "compiled-cross-entropy-loops",
        "            if keep[r]:\n                p = vexp(z.dtype.type(z[r, j] - lse[r]))",
        "            if True:\n                p = vexp(z.dtype.type(z[r, j] - lse[r]))"),
    Bug("compiled-adamw-no-bias-correction", "the AdamW loop forgets the bias corrections", "compiled-adamw-loop",
        "        step = lr * (m[i] / correction1) / (np.sqrt(v[i] / correction2) + eps)",
        "        step = lr * m[i] / (np.sqrt(v[i]) + eps)"),
    Bug("compiled-adamw-object-mode", "the AdamW loop is compiled in numba's object mode (Python's speed, right values)",
        "compiled-adamw-loop", "@compiled\ndef _adamw_loop(", "@numba.jit(forceobj=True)\ndef _adamw_loop("),
    Bug("disable-clears-everything", "disable() empties KERNELS, other kernels too", "switch",
        """    for op, fast in FAST_KERNELS.items():
        if KERNELS.get(op) is fast:
            del KERNELS[op]""", "    KERNELS.clear()"),
]

BUGS["08"] += [  # so that every exercise has at least three (the blame table, test_blame_table.py)
    Bug("compiled-layer-norm-part-off-by-one", "each part's row loop stops one row early", "compiled-layer-norm-loops",
        "range(p * rows // parts, (p + 1) * rows // parts)", "range(p * rows // parts, (p + 1) * rows // parts - 1)"),
    Bug("compiled-gelu-cubic-coefficient", "du/dv forgets the 3 from the derivative of v³", "compiled-gelu-loops",
        "    k3 = x.dtype.type(3 * 0.044715)", "    k3 = x.dtype.type(0.044715)"),
    Bug("compiled-gelu-no-upstream", "the GELU backward loop forgets the upstream gradient", "compiled-gelu-loops",
        "        grad_x[i] = grad[i] * s * (", "        grad_x[i] = s * ("),
    Bug("compiled-cross-entropy-no-max-subtraction", "the log-sum-exp loop forgets to subtract the row's maximum",
        "compiled-cross-entropy-loops",
        "                total += vexp(z[r, j] - top)\n            lse[r] = top + math.log(total)",
        "                total += vexp(z[r, j])\n            lse[r] = math.log(total)"),
    Bug("compiled-cross-entropy-no-scale", "the backward loop forgets the mean's scale", "compiled-cross-entropy-loops",
        "(p - 1.0 if j == targets[r] else p) * scale", "(p - 1.0 if j == targets[r] else p)"),
    Bug("compiled-adamw-v-not-squared", "the second moment averages the gradient, not its square",
        "compiled-adamw-loop", "one_minus_beta2 * grad[i] * grad[i]", "one_minus_beta2 * grad[i]"),
    Bug("compiled-adamw-betas-swapped", "the first moment weighs the old m by 1 − β₁ and the gradient by β₁",
        "compiled-adamw-loop", "beta1 * m[i] + one_minus_beta1 * grad[i]", "one_minus_beta1 * m[i] + beta1 * grad[i]"),
    Bug("enable-rebinds-kernels", "enable() assigns a new KERNELS, a local name, so nothing is switched on", "switch",
        "    KERNELS.update(FAST_KERNELS)", "    KERNELS = dict(FAST_KERNELS)  # noqa: F841"),
    Bug("is-enabled-any", "is_enabled() is true when any fast kernel is on", "switch",
        "    return all(KERNELS.get(op) is fast", "    return any(KERNELS.get(op) is fast"),
]

BUGS["02"] += [  # mistakes that were blamed on the wrong exercise, or shown by what they broke later
    Bug("topological-order-per-path", "topological_order places a tensor once per path to it (it does not skip one "
        "already placed): gradients stay right, each rule runs more than once", "backward",
        """        if id(tensor) in visited:  # reached again through another path: already placed
            continue
""", ""),
]
