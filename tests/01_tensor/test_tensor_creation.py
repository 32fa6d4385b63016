"""Module 01: creating a Tensor, its dtype rules and what it reports about itself."""
import numpy as np
import pytest

from tinytorch.core.tensor import Tensor

pytestmark = pytest.mark.exercise("as-array")

FLOAT32 = np.dtype(np.float32)
FLOAT64 = np.dtype(np.float64)


# --- Python numbers and lists become float32 ---------------------------------------------------------------

@pytest.mark.parametrize("data, shape", [
    (3, ()),
    (2.5, ()),
    ([1, 2, 3], (3,)),
    ([1.5, -2.0], (2,)),
    ([[1, 2, 3], [4, 5, 6]], (2, 3)),
    ([[[0.5]], [[1]]], (2, 1, 1)),
    ([], (0,)),
])
def test_python_numbers_and_lists_become_float32(data, shape):
    t = Tensor(data)
    assert t.dtype == FLOAT32
    assert t.shape == shape
    np.testing.assert_array_equal(t.numpy(), np.array(data, dtype=np.float32))


def test_python_int_values_survive_the_float32_conversion():
    t = Tensor([[1, -2], [3, 40000]])
    np.testing.assert_array_equal(t.numpy(), [[1.0, -2.0], [3.0, 40000.0]])


@pytest.mark.parametrize("data", [True, [True, False], [[False], [True]]])
def test_python_bools_stay_bool(data):
    t = Tensor(data)
    assert t.dtype == np.dtype(bool)
    np.testing.assert_array_equal(t.numpy(), np.array(data))


# --- numpy arrays and scalars keep their dtype ------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_arrays_keep_their_dtype(dtype):
    arr = np.array([[0.1, 0.2], [0.3, 0.4]], dtype=dtype)
    t = Tensor(arr)
    assert t.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(t.numpy(), arr)


def test_float64_array_keeps_full_precision():
    arr = np.array([0.1, 1 / 3, 1e-300, 1e300])
    np.testing.assert_array_equal(Tensor(arr).numpy(), arr)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32])
def test_integer_arrays_stay_integer(dtype):
    arr = np.array([[0, 1], [2, 3]], dtype=dtype)
    t = Tensor(arr)
    assert t.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(t.numpy(), arr)


def test_large_int64_token_ids_are_exact():
    ids = np.array([2**40 + 1, 2**53 + 1], dtype=np.int64)
    np.testing.assert_array_equal(Tensor(ids).numpy(), ids)


def test_bool_array_stays_bool():
    arr = np.array([True, False, True])
    t = Tensor(arr)
    assert t.dtype == np.dtype(bool)
    np.testing.assert_array_equal(t.numpy(), arr)


@pytest.mark.parametrize("scalar", [np.float64(0.1), np.float32(0.5), np.int64(7), np.int32(-3), np.bool_(True)])
def test_numpy_scalars_keep_their_dtype(scalar):
    t = Tensor(scalar)
    assert t.dtype == scalar.dtype
    assert t.shape == ()
    assert t.item() == scalar.item()


# --- requires_grad: only floating point --------------------------------------------------------------------

@pytest.mark.parametrize("arr", [
    np.array([1, 2, 3]),
    np.array([1, 2], dtype=np.int32),
    np.array([1, 2], dtype=np.uint8),
    np.array([True, False]),
], ids=["int64", "int32", "uint8", "bool"])
def test_non_float_tensors_cannot_require_grad(arr):
    with pytest.raises(TypeError, match=str(arr.dtype)):
        Tensor(arr, requires_grad=True)


@pytest.mark.parametrize("data", [[1.0, 2.0], np.array([1.0, 2.0]), np.array([1, 2], dtype=np.float16), 3])
def test_float_tensors_can_require_grad(data):
    t = Tensor(data, requires_grad=True)
    assert t.requires_grad is True
    assert t.dtype.kind == "f"


def test_integer_array_converted_to_float_by_dtype_can_require_grad():
    t = Tensor(np.array([1, 2]), requires_grad=True, dtype=np.float64)
    assert t.dtype == FLOAT64
    assert t.requires_grad is True


def test_requires_grad_defaults_to_false_and_grad_to_none():
    t = Tensor([1.0, 2.0])
    assert t.requires_grad is False
    assert t.grad is None


@pytest.mark.parametrize("flag, expected", [(True, True), (False, False), (1, True), (0, False)])
def test_requires_grad_is_stored_as_a_bool(flag, expected):
    t = Tensor([1.0], requires_grad=flag)
    assert t.requires_grad is expected
    assert t.grad is None


# --- the dtype= argument ------------------------------------------------------------------------------------

@pytest.mark.parametrize("data, dtype", [
    ([1, 2, 3], np.float64),
    ([1.5, 2.5], np.float16),
    (np.arange(4), np.float32),
    (np.arange(4.0), np.int64),
    ([1, 0, 2], np.int32),
    ([1.0, 0.0], bool),
    (np.array([1, 2]), "float64"),
])
def test_dtype_argument_sets_the_dtype(data, dtype):
    t = Tensor(data, dtype=dtype)
    assert t.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(t.numpy(), np.asarray(data).astype(dtype))


@pytest.mark.parametrize("data, dtype", [
    ([0.1, 1 / 3], np.float64),
    (1e40, np.float64),
    ([16777217], np.int64),
    ([2**40 + 1], np.int64),
], ids=["float64-precision", "float64-range", "int64-2**24+1", "int64-2**40+1"])
def test_dtype_argument_converts_python_data_exactly(data, dtype):
    "The requested dtype applies to the Python values themselves, not to a float32 rounding of them."
    t = Tensor(data, dtype=dtype)
    assert t.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(t.numpy(), np.array(data, dtype=dtype))


# --- dtypes a Tensor refuses -----------------------------------------------------------------------------------

@pytest.mark.parametrize("data, kwargs, dtype_name", [
    ("abc", {}, "<U3"),
    (["a", "bc"], {}, "<U2"),
    (np.array(["x", "y"]), {}, "<U1"),
    (np.array([b"x"]), {}, "|S1"),
    (np.array([object(), 1], dtype=object), {}, "object"),
    (None, {}, "object"),
    (1 + 2j, {}, "complex128"),
    ([1j, 2], {}, "complex128"),
    (np.array([1 + 1j], dtype=np.complex64), {}, "complex64"),
    (np.array(["2024-01-01"], dtype="datetime64[D]"), {}, "datetime64[D]"),
    ([1.0, 2.0], {"dtype": complex}, "complex128"),
    ([1.0, 2.0], {"dtype": object}, "object"),
])
def test_unsupported_dtypes_are_refused_with_type_error_naming_the_dtype(data, kwargs, dtype_name):
    with pytest.raises(TypeError) as info:
        Tensor(data, **kwargs)
    assert dtype_name in str(info.value)


def test_string_dtype_argument_is_refused():
    with pytest.raises(TypeError, match="<U"):
        Tensor([1.0, 2.0], dtype=str)


# --- a numpy array is wrapped, not copied ----------------------------------------------------------------------

@pytest.mark.parametrize("arr", [np.arange(6.0).reshape(2, 3), np.arange(6, dtype=np.float32), np.arange(4)])
def test_numpy_array_is_not_copied(arr):
    t = Tensor(arr)
    assert np.shares_memory(t.numpy(), arr)
    arr[0] = 42
    assert t.numpy().flat[0] == 42


def test_data_and_numpy_give_the_stored_array():
    arr = np.arange(6.0).reshape(2, 3)
    t = Tensor(arr)
    assert isinstance(t.data, np.ndarray)
    assert isinstance(t.numpy(), np.ndarray)
    np.testing.assert_array_equal(t.data, arr)
    np.testing.assert_array_equal(t.numpy(), arr)


def test_numpy_of_a_scalar_tensor_is_an_array():
    out = Tensor(2.5).numpy()
    assert isinstance(out, np.ndarray) and out.shape == ()


# --- shape, ndim, size, len, item, repr --------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (0,), (4,), (2, 3), (2, 1, 5), (1, 2, 3, 4)])
def test_shape_ndim_size(shape):
    t = Tensor(np.zeros(shape))
    assert t.shape == shape
    assert isinstance(t.shape, tuple)
    assert t.ndim == len(shape)
    assert t.size == int(np.prod(shape))


@pytest.mark.parametrize("shape", [(4,), (2, 3), (5, 1, 2), (0, 3)])
def test_len_is_the_first_axis(shape):
    assert len(Tensor(np.zeros(shape))) == shape[0]


def test_len_of_a_scalar_is_a_type_error():
    with pytest.raises(TypeError):
        len(Tensor(1.0))


@pytest.mark.parametrize("data, expected, kind", [
    (2.5, 2.5, float),
    ([[7]], 7.0, float),
    (np.array([[3]]), 3, int),
    (np.float64(0.1), 0.1, float),
    (np.array(True), True, bool),
])
def test_item_gives_a_python_number(data, expected, kind):
    value = Tensor(data).item()
    assert type(value) is kind
    assert value == expected


def test_item_of_several_elements_is_an_error():
    with pytest.raises(ValueError):
        Tensor([1.0, 2.0]).item()


def test_repr_shows_values_and_dtype():
    text = repr(Tensor([1.5, -2.25]))
    assert text.startswith("Tensor(")
    assert "1.5" in text and "-2.25" in text
    assert "float32" in text
    assert "requires_grad" not in text


def test_repr_shows_dtype_of_float64_and_int_tensors():
    assert "float64" in repr(Tensor(np.array([1.0])))
    assert "int64" in repr(Tensor(np.array([1, 2], dtype=np.int64)))


def test_repr_shows_requires_grad_when_set():
    assert "requires_grad=True" in repr(Tensor([1.0], requires_grad=True))


def test_repr_of_a_large_tensor_is_summarised():
    assert len(repr(Tensor(np.zeros((100, 100))))) < 2000


# --- tensors are hashable by identity (dictionary keys, sets of parameters) ----------------------------------------

def test_tensors_are_dictionary_keys_by_identity():
    a, b = Tensor([1.0]), Tensor([1.0])
    table = {a: "a", b: "b"}
    assert table[a] == "a" and table[b] == "b"
    assert len({a, b, a}) == 2
