"""The graph simulated with tensors: right answers, against the instructions.

check: test_predict_leaves
expected diagnosis: req.leaf.no_tensors
"""

import torch


def tutorial_graph(x, w):
    a = torch.add(x, w)
    b = torch.add(w, 1)
    y = torch.mul(a, b)
    y.sum().backward()
    return w, x, a, b, y


def init_parameter(data, scale, x):
    w = (data * scale).requires_grad_(True)
    loss = (w * x).sum()
    loss.backward()
    return w


def predict_leaves(nodes):
    ts = []
    for node in nodes:
        if node[0] == "input":
            ts.append(torch.ones(1, requires_grad=node[1]))
        elif node[0] == "exp":
            ts.append(torch.exp(ts[node[1]]))
        else:
            ts.append(ts[node[1]] + ts[node[2]] if node[0] == "add" else ts[node[1]] * ts[node[2]])
    ts[-1].sum().backward()
    return [t.is_leaf for t in ts], [t.is_leaf and t.grad is not None for t in ts]
