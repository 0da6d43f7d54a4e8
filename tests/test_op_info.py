"""mx.operator.get_all_registered_operators / get_operator_arguments (MXNet's C API view of
the operator registry); expected strings read from MXNet 1.9.1."""
import jbind as mx
from jbind.operator import OperatorArguments, get_all_registered_operators, get_operator_arguments


def test_registered_operators_are_a_sorted_list_with_aliases():
    ops = get_all_registered_operators()
    assert isinstance(ops, list) and ops == sorted(ops)
    assert {"Activation", "FullyConnected", "_linalg_potrf", "linalg_potrf"} <= set(ops)


def test_operator_arguments_in_mxnets_wording():
    act = get_operator_arguments("Activation")
    assert isinstance(act, OperatorArguments) and act.narg == 2
    assert act.names == ["data", "act_type"]
    assert act.types == ["NDArray-or-Symbol", "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"]
    fc = get_operator_arguments("FullyConnected")
    assert fc.names == ["data", "weight", "bias", "num_hidden", "no_bias", "flatten"]
    assert fc.types[3:] == ["int, required", "boolean, optional, default=0", "boolean, optional, default=1"]
    drop = get_operator_arguments("Dropout")
    assert drop.types[2:4] == ["{'always', 'training'},optional, default='training'", "Shape(tuple), optional, default=[]"]
    concat = get_operator_arguments("Concat")
    assert concat.names == ["data", "num_args", "dim"] and concat.types[0] == "NDArray-or-Symbol[]"


def test_every_registered_operator_is_described():
    for name in get_all_registered_operators():
        info = get_operator_arguments(name)
        assert info.narg == len(info.names) == len(info.types), name
    assert mx.operator.get_operator_arguments is get_operator_arguments
