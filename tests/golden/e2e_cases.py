"""Four models trained in MXNet 1.9.1, checkpointed, and continued in jbind (issue #7).

Like cases.py, this imports only numpy and takes the library module ``mx`` as a
parameter, so the same code builds the symbols with MXNet (``make_e2e_golden.py``) and
with jbind (``tests/test_e2e_mxnet.py`` checks that both build the same graph).

The models keep the structure of MXNet's examples but are narrow, so that every
committed checkpoint stays small (all of tests/golden/e2e/ is under 2 MB):

* ``lenet``: example/image-classification/symbols/lenet.py (auto-named layers, tanh,
  max pooling) on 1x28x28 images, with 8 and 16 filters and 64 hidden units instead of
  20, 50 and 500.
* ``mlp_bn_dropout``: mlp.py's three FullyConnected layers (64, 32, 10 units) with a
  BatchNorm and a Dropout(p=0.5) after each hidden layer.
* ``resnet18_v1``: resnet-v1.py's 18-layer network (basic blocks, units [2, 2, 2, 2],
  its CIFAR stem for images of height <= 32) with filters [8, 8, 16, 32, 32] instead
  of [64, 64, 128, 256, 512], on 3x32x32 images.
* ``lstm_lm``: the bucketing example's LSTM language model (Embedding, two mx.rnn
  LSTMCells unrolled, FullyConnected, SoftmaxOutput) with vocabulary 20, embedding 8,
  16 hidden units and 5 steps.
"""
import numpy as np

# Training settings shared by MXNet's run and jbind's extra step.
OPTIMIZER = "sgd"
OPTIMIZER_PARAMS = {"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-4}
TRAIN_STEPS = 4          # steps MXNet trains before its checkpoint
EPOCH = 1                # MXNet's checkpoint epoch; jbind saves EPOCH + 1


def lenet(mx, num_classes=10):
    S = mx.sym
    data = S.Variable("data")
    conv1 = S.Convolution(data=data, kernel=(5, 5), num_filter=8)
    tanh1 = S.Activation(data=conv1, act_type="tanh")
    pool1 = S.Pooling(data=tanh1, pool_type="max", kernel=(2, 2), stride=(2, 2))
    conv2 = S.Convolution(data=pool1, kernel=(5, 5), num_filter=16)
    tanh2 = S.Activation(data=conv2, act_type="tanh")
    pool2 = S.Pooling(data=tanh2, pool_type="max", kernel=(2, 2), stride=(2, 2))
    fc1 = S.FullyConnected(data=S.Flatten(data=pool2), num_hidden=64)
    fc2 = S.FullyConnected(data=S.Activation(data=fc1, act_type="tanh"), num_hidden=num_classes)
    return S.SoftmaxOutput(data=fc2, name="softmax")


def mlp_bn_dropout(mx, num_classes=10):
    S = mx.sym
    h = S.Variable("data")
    for i, n in enumerate((64, 32)):
        h = S.FullyConnected(data=h, num_hidden=n, name="fc%d" % (i + 1))
        h = S.BatchNorm(data=h, fix_gamma=False, eps=2e-5, momentum=0.9, name="bn%d" % (i + 1))
        h = S.Activation(data=h, act_type="relu", name="relu%d" % (i + 1))
        h = S.Dropout(data=h, p=0.5, name="drop%d" % (i + 1))
    fc3 = S.FullyConnected(data=h, num_hidden=num_classes, name="fc3")
    return S.SoftmaxOutput(data=fc3, name="softmax")


def _residual_unit(S, data, num_filter, stride, dim_match, name, bn_mom=0.9):
    """resnet-v1.py's basic (bottle_neck=False) unit."""
    conv1 = S.Convolution(data=data, num_filter=num_filter, kernel=(3, 3), stride=stride, pad=(1, 1),
                          no_bias=True, workspace=256, name=name + "_conv1")
    bn1 = S.BatchNorm(data=conv1, fix_gamma=False, momentum=bn_mom, eps=2e-5, name=name + "_bn1")
    act1 = S.Activation(data=bn1, act_type="relu", name=name + "_relu1")
    conv2 = S.Convolution(data=act1, num_filter=num_filter, kernel=(3, 3), stride=(1, 1), pad=(1, 1),
                          no_bias=True, workspace=256, name=name + "_conv2")
    bn2 = S.BatchNorm(data=conv2, fix_gamma=False, momentum=bn_mom, eps=2e-5, name=name + "_bn2")
    if dim_match:
        shortcut = data
    else:
        conv1sc = S.Convolution(data=data, num_filter=num_filter, kernel=(1, 1), stride=stride, no_bias=True,
                                workspace=256, name=name + "_conv1sc")
        shortcut = S.BatchNorm(data=conv1sc, fix_gamma=False, momentum=bn_mom, eps=2e-5, name=name + "_sc")
    return S.Activation(data=bn2 + shortcut, act_type="relu", name=name + "_relu3")


def resnet18_v1(mx, num_classes=10, filter_list=(8, 8, 16, 32, 32), units=(2, 2, 2, 2)):
    """resnet-v1.py's `resnet(units, 4, filter_list, ..., (3, 32, 32), bottle_neck=False)`."""
    S = mx.sym
    data = S.identity(data=S.Variable(name="data"), name="id")
    body = S.Convolution(data=data, num_filter=filter_list[0], kernel=(3, 3), stride=(1, 1), pad=(1, 1),
                         no_bias=True, name="conv0", workspace=256)
    body = S.BatchNorm(data=body, fix_gamma=False, eps=2e-5, momentum=0.9, name="bn0")
    for i in range(len(units)):
        stride = (1, 1) if i == 0 else (2, 2)
        body = _residual_unit(S, body, filter_list[i + 1], stride, False, "stage%d_unit%d" % (i + 1, 1))
        for j in range(units[i] - 1):
            body = _residual_unit(S, body, filter_list[i + 1], (1, 1), True, "stage%d_unit%d" % (i + 1, j + 2))
    pool1 = S.Pooling(data=body, global_pool=True, kernel=(7, 7), pool_type="avg", name="pool1")
    fc1 = S.FullyConnected(data=S.Flatten(data=pool1), num_hidden=num_classes, name="fc1")
    return S.SoftmaxOutput(data=fc1, name="softmax")


def lstm_lm(mx, vocab=20, num_embed=8, num_hidden=16, num_layers=2, seq_len=5):
    """example/rnn/bucketing/lstm_bucketing.py's sym_gen for one bucket."""
    S = mx.sym
    data, label = S.Variable("data"), S.Variable("softmax_label")
    embed = S.Embedding(data=data, input_dim=vocab, output_dim=num_embed, name="embed")
    stack = mx.rnn.SequentialRNNCell()
    for i in range(num_layers):
        stack.add(mx.rnn.LSTMCell(num_hidden=num_hidden, prefix="lstm_l%d_" % i))
    stack.reset()
    outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
    pred = S.FullyConnected(data=S.Reshape(outputs, shape=(-1, num_hidden)), num_hidden=vocab, name="pred")
    return S.SoftmaxOutput(data=pred, label=S.Reshape(label, shape=(-1,)), name="softmax")


def _images(rng, shape):
    return rng.uniform(-1, 1, size=shape).astype(np.float32)


def _classes(rng, n, k):
    return rng.randint(0, k, size=(n,)).astype(np.float32)


def _tokens(rng, shape, vocab=20):
    return rng.randint(0, vocab, size=shape).astype(np.float32)


def cases(mx):
    """name -> dict(sym, data_shape, label_shape, batch(rng) -> (data, label))."""
    def case(fn, data_shape, label_shape, batch):
        with mx.name.NameManager():  # auto-names (lenet, resnet's `bn2 + shortcut`) start from 0
            sym = fn(mx)
        return dict(sym=sym, data_shape=data_shape, label_shape=label_shape, batch=batch)
    return {
        "lenet": case(lenet, (8, 1, 28, 28), (8,),
                      lambda r: (_images(r, (8, 1, 28, 28)), _classes(r, 8, 10))),
        "mlp_bn_dropout": case(mlp_bn_dropout, (16, 20), (16,),
                               lambda r: (_images(r, (16, 20)), _classes(r, 16, 10))),
        "resnet18_v1": case(resnet18_v1, (4, 3, 32, 32), (4,),
                            lambda r: (_images(r, (4, 3, 32, 32)), _classes(r, 4, 10))),
        "lstm_lm": case(lstm_lm, (4, 5), (4, 5),
                        lambda r: (_tokens(r, (4, 5)), _tokens(r, (4, 5)))),
    }


def step_symbol_json(name, sym_json):
    """The symbol jbind's and MXNet's extra step run: the checkpoint's own, except that
    the MLP's Dropout gets p=0 there, so that both frameworks take the same step (their
    random masks cannot match). Dropout still runs in MXNet's training before the
    checkpoint, and at inference, where it is the identity in both."""
    if name != "mlp_bn_dropout":
        return sym_json
    import json
    doc = json.loads(sym_json)
    for node in doc["nodes"]:
        if node["op"] == "Dropout":
            node["attrs"]["p"] = "0"
    return json.dumps(doc, indent=2)
