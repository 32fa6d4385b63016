"""The judge's comparison of an answer with the expected one, on values as the answer process records them
(`probes.result_data`): a wrong answer never matches, whatever object the student's code hands back."""
import numpy as np
import pytest

from tito.grading.judge import compare
from tito.grading.probes import result_data


class Linear:
    "A stand-in layer: an object the probes know by its class name only."


class ReLU:
    "Another class: a different answer."


class Hostile:
    "An object that raises on every attribute: recorded as 'unreadable'."

    def __getattribute__(self, name):
        raise RuntimeError("no")


class Holder:
    "An object holding an array, as a Tensor does: compared by its data."

    def __init__(self, data):
        self.data = np.asarray(data, dtype=float)


WRONG = [
    ("another class", [Linear(), Linear()], [Linear(), ReLU()]),
    ("an object whose class cannot be read", [Linear()], [Hostile()]),
    ("an object holding data where one known by its class is expected", Linear(), Holder([1.0])),
    ("a class where data is expected", Holder([1.0, 2.0]), Linear()),
    ("other data in the same class", Holder([1.0, 2.0]), Holder([1.0, 3.0])),
    ("a list one item short", [Linear(), Linear()], [Linear()]),
]
RIGHT = [
    ("the same classes", [Linear(), ReLU()], [Linear(), ReLU()]),
    ("the same data", Holder([1.0, 2.0]), Holder([1.0, 2.0 + 1e-12])),
]


@pytest.mark.parametrize("expected, received", [case[1:] for case in WRONG], ids=[case[0] for case in WRONG])
def test_a_wrong_answer_never_matches(expected, received):
    why = compare(result_data(expected), result_data(received), {})
    assert why, "matched"


def test_the_message_names_both_classes():
    assert compare(result_data([Linear()]), result_data([ReLU()]), {}) == "expected a Linear at [0], received a ReLU"


@pytest.mark.parametrize("expected, received", [case[1:] for case in RIGHT], ids=[case[0] for case in RIGHT])
def test_a_right_answer_matches(expected, received):
    assert compare(result_data(expected), result_data(received), {}) is None
