"""The course's own answers are strict: a step that raised while no check looks at its result is refused, since
the checks after it would test something else than they say (a model whose weights failed to load checks its
random initial weights)."""
import types

import numpy as np
import pytest

from tito.workspace import TitoError
from tito.grading import judge
from tito.grading.probes import UNCHECKED, Block, ProbeError, replay


class Model:
    def __init__(self):
        self.weight = np.zeros(3)

    def load(self, state: dict):
        if "weight" not in state:
            raise KeyError(f"missing key 'weight' in {sorted(state)}")
        self.weight = np.asarray(state["weight"], dtype=float)
        return self

    def __call__(self, x):
        return self.weight * x


LIBRARY = types.SimpleNamespace(Model=Model)


def tape_of(key: str, checked: bool = False) -> dict:
    block = Block("model")
    with block as (tt, check):
        model = tt.Model()
        loaded = model.load({key: np.arange(3.0)})
        if checked:
            check("load returns the model", loaded.weight)
        check("model(2)", model(2.0))
    return block.tape.as_json()


def test_an_unchecked_step_that_raised_is_named_in_a_strict_replay():
    results = replay(tape_of("mlp.weight"), LIBRARY, strict=True)
    assert isinstance(results[-1], dict) and UNCHECKED in results[-1], results
    (what,) = results[-1][UNCHECKED]
    assert "load" in what and "KeyError" in what, what


def test_a_student_replay_is_never_strict_and_a_correct_tape_is_clean():
    assert len(replay(tape_of("mlp.weight"), LIBRARY)) == 1, "a student's answers are one result per check"
    results = replay(tape_of("weight"), LIBRARY, strict=True)
    assert len(results) == 1 and np.allclose(results[0]["data"], [0.0, 2.0, 4.0]), results


def test_a_step_that_raised_and_is_checked_is_an_answer_not_a_mistake():
    results = replay(tape_of("mlp.weight", checked=True), LIBRARY, strict=True)
    assert len(results) == 2 and "$raised" in results[0], results


def test_the_judge_refuses_course_answers_with_an_unchecked_failure():
    tape = tape_of("mlp.weight")
    cell = types.SimpleNamespace(grade_id="test-model", checks=[{"name": "model(2)", "kind": "value"}])
    probes = types.SimpleNamespace(cells=[cell])
    answers = types.SimpleNamespace(results={0: replay(tape, LIBRARY, strict=True)}, stopped={}, status={})
    with pytest.raises(TitoError, match=r"test-model.*KeyError.*no check looks at that result"):
        judge.expected_answers(probes, answers)


def checks_tape(raising: bool) -> dict:
    "A tape that loads the model with a key it lacks, as a check that it raises or as a check of what it returns."
    block = Block("model")
    with block as (tt, check):
        model = tt.Model()
        if raising:
            check.raises("load without 'weight'", KeyError, lambda: model.load({"w": np.arange(3.0)}), words=("weight",))
        else:
            check("load without 'weight'", model.load({"w": np.arange(3.0)}))
    return block.tape.as_json()


def test_the_student_process_cannot_tell_a_check_that_expects_an_error_from_one_that_expects_a_value():
    assert checks_tape(raising=True) == checks_tape(raising=False)  # it could claim an error for those alone


@pytest.mark.parametrize("action", [lambda model: (lambda: None), lambda model: (lambda: [model.load({})])],
                         ids=["returns nothing", "returns a list around the call"])
def test_a_check_that_expects_an_error_must_check_the_call_itself(action):
    "An action returning anything but the raising call's placeholder would write a check no answer could pass."
    with pytest.raises(ProbeError, match="must return the call that raises"):
        with Block("model") as (tt, check):
            check.raises("load without 'weight'", KeyError, action(tt.Model()))


def test_a_check_that_expects_an_error_is_answered_by_the_error_or_by_what_came_back():
    [answer] = replay(checks_tape(raising=True), LIBRARY)
    assert answer["$raised"][0] == "KeyError" and "weight" in answer["message"], answer
    assert judge.compare_raises(answer, {"error": "KeyError", "words": ["weight"]}) is None
    returned = judge.compare_raises({"$object": "Model"}, {"error": "KeyError", "words": ["weight"]})
    assert returned == "expected it to raise KeyError, but it returned a Model"


class Vec:
    "A tensor-like result: an array in `.data`."

    def __init__(self, data):
        self.data = np.asarray(data, dtype=float)

    def double(self):
        return Vec(self.data * 2)


def test_a_check_of_t_data_looks_at_t_and_a_later_use_of_t_data_still_works():
    block = Block("vec")
    with block as (tt, check):
        v = tt.Vec([1.0, 2.0])
        check("v.data", v.data)                    # written as a check of v
        d = v.double().data
        check("v.double().data", d)
        check("v.double().data + 1", d + 1)        # the taken-out step is written back before this one uses it
    tape = block.tape.as_json()
    calls = {step[1]: step[-1] for step in tape["steps"] if step[0] == "call"}
    looked_at = [calls.get(step[2].get("$ref")) for step in tape["steps"] if step[0] == "check"]
    assert looked_at[:2] == ["tt.Vec([1.0, 2.0])", "tt.Vec([1.0, 2.0]).double()"], tape["steps"]
    assert [step[0] for step in tape["steps"]].count("get") == 3, "tt.Vec, .double and d's .data (written back)"
    results = replay(tape, types.SimpleNamespace(Vec=Vec), strict=True)
    assert [r["$object"] for r in results[:2]] == ["Vec", "Vec"], results
    assert np.allclose(results[1]["data"]["data"], [2.0, 4.0]) and np.allclose(results[2]["data"], [3.0, 5.0]), results
