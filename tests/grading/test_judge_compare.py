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


class ScalarHolder:
    "A Tensor that keeps a numpy scalar as it was given (module 01 allows it): compared by that number."

    def __init__(self, number):
        self.data = np.float64(number)


class ListHolder:
    "An object whose .data is a list, not an array: known by its class alone."

    def __init__(self, data):
        self.data = list(data)


def within(bound):
    "A property check written as the course writes them: a message when something is wrong, else None."
    def expect(got, want):
        if np.abs(got).max() > bound:
            return f"expected numbers within ±{bound}"
    return expect


NO_OPTIONS = {}
WRONG = [
    ("another class", [Linear(), Linear()], [Linear(), ReLU()], NO_OPTIONS),
    ("an object whose class cannot be read", [Linear()], [Hostile()], NO_OPTIONS),
    ("an object holding data where one known by its class is expected", Linear(), Holder([1.0]), NO_OPTIONS),
    ("a class where data is expected", Holder([1.0, 2.0]), Linear(), NO_OPTIONS),
    ("other data in the same class", Holder([1.0, 2.0]), Holder([1.0, 3.0]), NO_OPTIONS),
    ("a list one item short", [Linear(), Linear()], [Linear()], NO_OPTIONS),
    ("another number as a numpy scalar .data", Holder(2.5), ScalarHolder(3.5), NO_OPTIONS),
    ("NaN to a property check (every comparison with NaN is False)", np.array([0.5, -0.2]),
     np.array([np.nan, np.nan]), {"expect": within(1.0)}),
    ("a NaN inside a tuple to a property check", (np.array([0.5]), 2.0), (np.array([0.5]), np.nan),
     {"expect": lambda got, want: "far" if got[1] > 10 else None}),
    ("the string 'nan' to a property check that reads it as a float (NaN fails no comparison)", 2.0, "nan",
     {"expect": lambda got, want: "far" if abs(float(got) - 2.0) > 0.1 else None}),
    ("an integer beyond any float to a property check of an accuracy", (0.97, 0.96), (10 ** 400, 10 ** 400),
     {"expect": lambda got, want: None if min(got) >= 0.95 else "low"}),
    ("one number where the course's answer has two", (0.5, 0.4), (0.5,),
     {"expect": lambda got, want: None if all(g < 1 for g in got) else "high"}),
]
RIGHT = [
    ("the same classes", [Linear(), ReLU()], [Linear(), ReLU()], NO_OPTIONS),
    ("the same data", Holder([1.0, 2.0]), Holder([1.0, 2.0 + 1e-12]), NO_OPTIONS),
    ("other numbers with the property", np.array([0.5, -0.2]), np.array([-0.9, 0.1]), {"expect": within(1.0)}),
    ("NaN where the course's answer has NaN too", np.array([np.nan]), np.array([np.nan]), {"expect": within(1.0)}),
    ("a numpy scalar as .data where the course holds a 0-d array", Holder(2.5), ScalarHolder(2.5), NO_OPTIONS),
    ("float32 numbers and an integer where the course has Python floats", (0.97, 0.96), (np.float32(0.99), 1),
     {"expect": lambda got, want: None if min(got) >= 0.95 else "low"}),
]


@pytest.mark.parametrize("expected, received, options", [case[1:] for case in WRONG], ids=[case[0] for case in WRONG])
def test_a_wrong_answer_never_matches(expected, received, options):
    why = compare(result_data(expected), result_data(received), options)
    assert why, "matched"


def test_the_message_names_both_classes():
    assert compare(result_data([Linear()]), result_data([ReLU()]), {}) == "expected a Linear at [0], received a ReLU"


def test_the_message_says_what_data_was_expected_and_that_none_came():
    why = compare(result_data(Holder([1.0, 2.0])), result_data(ListHolder([1.0, 2.0])), {})
    assert why == ("expected a Holder holding float64 [1., 2.], received a ListHolder whose .data is not a numpy "
                   "array of numbers"), why


@pytest.mark.parametrize("expected, received, options", [case[1:] for case in RIGHT], ids=[case[0] for case in RIGHT])
def test_a_right_answer_matches(expected, received, options):
    assert compare(result_data(expected), result_data(received), options) is None
