import json, sys
from pathlib import Path
nbp = Path("modules/01_tensor/01_tensor.ipynb")
nb = json.loads(nbp.read_text())
H = "### BEGIN HIDDEN TESTS"; E = "### END HIDDEN TESTS"
cells = {
"test-constructor": f'''with checks("as-array") as (tt, check):
    check("Tensor([1, 2]) is float32", tt.Tensor([1, 2]).data)
    check("Tensor(3) is a float32 scalar", tt.Tensor(3).data)
    check("Tensor(2.5).shape", tt.Tensor(2.5).shape)
    check("a float64 array stays float64", tt.Tensor(np.zeros(3, dtype=np.float64)).data)
    check("an integer array stays integer", tt.Tensor(np.array([1, 2])).data)
    check("numpy scalars keep their dtypes", (tt.Tensor(np.float64(0.1)).data, tt.Tensor(np.int64(3)).data))
    check("booleans stay booleans", tt.Tensor([True, False]).data)
    check("a given dtype", tt.Tensor([1, 2], dtype=np.float64).data)
    check("a given dtype is applied directly, not through float32", tt.Tensor([1.0001], dtype=np.float64).data,
          rtol=0, atol=0)
    check.raises("Tensor(['a', 'b']) is refused", TypeError, lambda: tt.Tensor(["a", "b"]), words=("dtype",))
    check.raises("an integer tensor cannot require gradients", TypeError,
                 lambda: tt.Tensor(np.array([1, 2]), requires_grad=True))
    {H}
    check("float32 and bool numpy scalars", (tt.Tensor(np.float32(2.5)).data, tt.Tensor(np.bool_(True)).data))
    check("a large int64", tt.Tensor([2 ** 40 + 1], dtype=np.int64).data)
    check("float16 and int32 given", (tt.Tensor([[1, 2]], dtype=np.float16).data, tt.Tensor(7, dtype=np.int32).data))
    check("a float64 arange", tt.Tensor(np.arange(3.0)).data)
    check.raises("Tensor([['x']]) is refused", TypeError, lambda: tt.Tensor([["x"]]), words=("dtype",))
    {E}''',
"test-arithmetic": f'''with checks("arithmetic", after=("as-array",)) as (tt, check):
    a, b = tt.Tensor([[1.0, 2.0], [3.0, 4.0]]), tt.Tensor([10.0, 20.0])
    check("a + b", (a + b).data)
    check("a - b", (a - b).data)
    check("a * b", (a * b).data)
    check("a / b", (a / b).data)
    check("-a", (-a).data)
    check("1 - a", (1 - a).data)
    check("2 / b", (2 / b).data)
    check("a * 2 stays float32", (a * 2).data)
    check("a float64 tensor times 3 stays float64", (tt.Tensor(np.ones(2, dtype=np.float64)) * 3).data)
    check("integer ids plus 1 stay integer", (tt.Tensor(np.array([1, 2])) + 1).data)
    check("(3, 1) + (1, 4)", (tt.Tensor(np.ones((3, 1))) + tt.Tensor(np.arange(4.0).reshape(1, 4))).data)
    check("(2, 3) + (3,): shapes line up from the right",
          (tt.Tensor(np.zeros((2, 3))) + tt.Tensor([0.0, 1.0, 2.0])).data)
    for op in ("add", "sub", "mul", "div"):
        check.raises(f"{{op}} of (2, 3) and (4,)", ValueError,
                     lambda: getattr(tt, op)(tt.Tensor(np.ones((2, 3))), tt.Tensor(np.ones((4,)))),
                     words=(op, "(2, 3)", "(4,)"))
    {H}
    rng = np.random.default_rng(1)
    for sa, sb in (((4, 1, 5), (3, 1)), ((5,), (2, 3, 5)), ((2, 1), (2, 3)), ((1, 3, 1), (2, 1, 4)), ((), (2, 2))):
        da, db = rng.normal(size=sa), rng.normal(size=sb)
        for op in ("add", "sub", "mul", "div"):
            check(f"{{op}} of {{sa}} and {{sb}}", getattr(tt, op)(tt.Tensor(da), tt.Tensor(db)).data)
    for sa, sb in (((2, 3), (2,)), ((3, 1, 5), (4, 5, 1)), ((5,), (5, 2))):
        check.raises(f"mul of {{sa}} and {{sb}}", ValueError, lambda: tt.mul(tt.Tensor(np.ones(sa)), tt.Tensor(np.ones(sb))),
                     words=("mul", str(sa), str(sb)))
    {E}''',
"test-elementwise": f'''with checks("elementwise", after=("as-array", "arithmetic")) as (tt, check):
    x = tt.Tensor([1.0, 4.0, 9.0])
    check("x ** 2", (x ** 2).data)
    check("x ** 0.5", (x ** 0.5).data)
    check("2 ** Tensor([1.0, 3.0])", (2 ** tt.Tensor([1.0, 3.0])).data)
    check("x.sqrt()", x.sqrt().data)
    check("x.log()", x.log().data)
    check("x.exp() stays float32", x.exp().data)
    check("tanh of 0 and 100", tt.Tensor([0.0, 100.0]).tanh().data)
    {H}
    rng = np.random.default_rng(5)
    u = rng.uniform(0.5, 2.0, size=(3, 4))
    for op in ("exp", "log", "sqrt", "tanh"):
        check(f"{{op}} of a float64 (3, 4)", getattr(tt.Tensor(u), op)().data)
    check("(3, 4) ** (4,)", (tt.Tensor(u) ** tt.Tensor(rng.normal(size=4))).data)
    check("(3, 1) ** -1.5", (tt.Tensor(u[:, :1]) ** -1.5).data)
    {E}''',
"test-matmul": f'''with checks("matmul", after=("as-array",)) as (tt, check):
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(2, 3)), rng.normal(size=(3, 4))
    check("(2, 3) @ (3, 4)", (tt.Tensor(A) @ tt.Tensor(B)).data)
    Ab, Bb = rng.normal(size=(5, 1, 2, 3)), rng.normal(size=(4, 3, 6))
    check("(5, 1, 2, 3) @ (4, 3, 6): the batch axes broadcast", tt.Tensor(Ab).matmul(tt.Tensor(Bb)).data)
    check("(2, 3) @ (3,)", (tt.Tensor(A) @ tt.Tensor(np.ones(3))).data)
    X3 = rng.normal(size=(4, 5, 2))
    check("(batch, seq, k) @ (k, m) gives (batch, seq, m)", (tt.Tensor(X3) @ tt.Tensor(A)).data)
    for sa, sb in (((2, 3), (4, 5)), ((2, 2, 3), (3, 3, 4)), ((3,), ())):
        check.raises(f"matmul of {{sa}} and {{sb}}", ValueError, lambda: tt.Tensor(np.ones(sa)) @ tt.Tensor(np.ones(sb)),
                     words=("matmul", str(sa), str(sb)))
    {H}
    for sa, sb in (((3, 2, 4, 5), (5, 6)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,)), ((4,), (4,)),
                   ((3, 1, 4, 2), (5, 2, 3)), ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (1, 4, 2)), ((1, 2, 3), (3, 5)),
                   ((2, 5), (3, 5, 4)), ((2, 1, 3, 4), (4, 5))):
        check(f"{{sa}} @ {{sb}}", (tt.Tensor(rng.normal(size=sa)) @ tt.Tensor(rng.normal(size=sb))).data)
    check("float32 @ float32 stays float32", (tt.Tensor(rng.normal(size=(2, 3, 4)).astype(np.float32))
                                               @ tt.Tensor(rng.normal(size=(4, 2)).astype(np.float32))).data)
    check.raises("batch axes (2,) and (3,) do not broadcast", ValueError,
                 lambda: tt.Tensor(np.ones((2, 3, 4))) @ tt.Tensor(np.ones((3, 4, 5))), words=("matmul",))
    {E}''',
"test-reductions": f'''with checks("reductions", after=("as-array",)) as (tt, check):
    t = tt.Tensor(np.arange(24.0).reshape(2, 3, 4))
    check("sum()", t.sum().data)
    check("sum(axis=1)", t.sum(axis=1).data)
    check("sum(axis=(0, 2), keepdims=True)", t.sum(axis=(0, 2), keepdims=True).data)
    check("mean(axis=-1)", t.mean(axis=-1).data)
    check("mean(axis=0)", t.mean(axis=0).data)
    check("max(axis=0)", t.max(axis=0).data)
    check("max().item()", t.max().item())
    for name in ("sum", "mean", "max"):
        check(f"{{name}}(axis=1, keepdims=True)", getattr(t, name)(axis=1, keepdims=True).data)
    check.raises("sum(axis=3) of a 3-d tensor", ValueError, lambda: t.sum(axis=3), words=("axis",))
    {H}
    x4 = tt.Tensor(np.random.default_rng(2).normal(size=(2, 3, 4, 5)))
    for name in ("sum", "mean", "max"):
        for axis in (None, 0, 2, -1, (1, 3), (0, -1), (0, 1, 2, 3)):
            for keep in (False, True):
                check(f"{{name}}(axis={{axis}}, keepdims={{keep}})", getattr(x4, name)(axis=axis, keepdims=keep).data)
    {E}''',
"test-shape-ops": f'''with checks("shape-ops", after=("as-array",)) as (tt, check):
    t = tt.Tensor(np.arange(24.0).reshape(2, 3, 4))
    check("reshape(6, 4)", t.reshape(6, 4).data)
    check("reshape((4, -1))", t.reshape((4, -1)).data)
    check("transpose() swaps the last two axes", t.transpose().data)
    check("transpose(0, 2)", t.transpose(0, 2).data)
    check("permute(2, 0, 1)", t.permute(2, 0, 1).data)
    check.raises("reshape(5, 5) of 24 elements", ValueError, lambda: t.reshape(5, 5))
    check.raises("permute(0, 0, 1)", ValueError, lambda: t.permute(0, 0, 1))
    check.raises("permute(0, 1) of a 3-d tensor", ValueError, lambda: t.permute(0, 1))
    {H}
    t4 = tt.Tensor(np.random.default_rng(3).normal(size=(2, 3, 4, 5)))
    check("transpose(0, 1) of a 4-d tensor", t4.transpose(0, 1).data)
    check("transpose(1, -1)", t4.transpose(1, -1).data)
    check("permute(3, 1, 0, 2)", t4.permute(3, 1, 0, 2).data)
    check("permute(-1, 0, 1, 2)", t4.permute(-1, 0, 1, 2).data)
    check("reshape(-1)", t4.reshape(-1).data)
    check("reshape(6, 20)", t4.reshape(6, 20).data)
    {E}''',
"test-indexing": f'''with checks("indexing", after=("as-array",)) as (tt, check):
    table = tt.Tensor(np.arange(12.0).reshape(4, 3))
    check("table[ids] for ids of shape (2, 2)", table[np.array([[0, 3], [3, 3]])].data)
    check("table[Tensor([1, 2])]", table[tt.Tensor(np.array([1, 2]))].data)
    check("table[1:3, ::2]", table[1:3, ::2].data)
    check("table[0, 1].item()", table[0, 1].item())
    check("masked_fill(column 0, -1.0)", table.masked_fill(np.array([[True, False, False]]), -1.0).data)
    check("masked_fill does not change its input", table.data)
    f32, eye = tt.Tensor(np.zeros((2, 3), dtype=np.float32)), np.eye(2, 3, dtype=bool)
    check("a float32 tensor stays float32", f32.masked_fill(eye, np.float64(-1e9)).data)
    check("the value may be a one-element Tensor", f32.masked_fill(eye, tt.Tensor(5.0)).data)
    check.raises("a (2, 3) mask on a (4, 3) tensor", ValueError,
                 lambda: table.masked_fill(np.ones((2, 3), dtype=bool), 0.0), words=("(2, 3)", "(4, 3)"))
    {H}
    for mshape in ((2, 4, 3), (3, 1), (4,)):
        check.raises(f"a mask of shape {{mshape}}", ValueError,
                     lambda: table.masked_fill(np.ones(mshape, dtype=bool), 0.0), words=(str(mshape), "(4, 3)"))
    causal = np.tril(np.ones((3, 3), dtype=bool))
    check("a causal mask over a batch", tt.Tensor(np.zeros((2, 3, 3))).masked_fill(~causal, -np.inf).data)
    check("a 0/1 mask", table.masked_fill(np.array([1, 0, 1]), -2.0).data)
    check("two integer index arrays", table[np.array([0, 2]), np.array([1, 1])].data)
    {E}''',
}
for c in nb["cells"]:
    gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    if gid in cells:
        c["source"] = cells[gid].splitlines(keepends=True)
        c["outputs"] = []
# setup cell after cell index 2
idx = next(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and "".join(c["source"]).startswith("#| export\nimport numpy as np"))
if not any("from tito.grading.probes import checks" in "".join(c["source"]) for c in nb["cells"]):
    setup = {"cell_type": "code", "execution_count": None, "id": "checks-setup", "metadata": {"nbgrader": {"grade": False, "grade_id": "checks-setup", "locked": True, "schema_version": 3, "solution": False}}, "outputs": [],
             "source": ["from tito.grading.probes import checks  # the graded cells are `with checks(...)` blocks (see above)"]}
    nb["cells"].insert(idx + 1, setup)
nbp.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
