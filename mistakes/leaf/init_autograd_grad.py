"""torch.autograd.grad: .grad left empty.

check: test_init_parameter
expected diagnosis: diag.leaf.grad_not_stored
"""

import torch


def tutorial_graph(x, w):
    a = torch.add(x, w)
    b = torch.add(w, 1)
    y = torch.mul(a, b)
    y.sum().backward()
    return w, x, a, b, y


def init_parameter(data, scale, x):
    w = (data * scale).requires_grad_()
    torch.autograd.grad((w * x).sum(), w)
    return w


def predict_leaves(nodes):
    requires = []
    parents = []
    for node in nodes:
        if node[0] == "input":
            requires.append(bool(node[1]))
            parents.append([])
        else:
            inputs = list(node[1:])
            requires.append(any(requires[i] for i in inputs))
            parents.append(inputs)
    # A tensor that requires grad is a leaf only when nothing recorded made it.
    is_leaf = [node[0] == "input" or not requires[k] for k, node in enumerate(nodes)]
    # Walk back from the last tensor along recorded edges only.
    reached = set()
    stack = [len(nodes) - 1] if requires[-1] else []
    while stack:
        k = stack.pop()
        if k in reached or not requires[k]:
            continue
        reached.add(k)
        stack.extend(parents[k])
    has_grad = [is_leaf[k] and requires[k] and k in reached for k in range(len(nodes))]
    return is_leaf, has_grad
