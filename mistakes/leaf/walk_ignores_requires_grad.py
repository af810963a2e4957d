"""Every leaf the walk back from the loss meets gets .grad.

check: test_predict_leaves
expected diagnosis: diag.leaf.no_requires_grad
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


def parts(nodes):
    requires, parents = [], []
    for node in nodes:
        if node[0] == "input":
            requires.append(bool(node[1]))
            parents.append([])
        else:
            requires.append(any(requires[i] for i in node[1:]))
            parents.append(list(node[1:]))
    is_leaf = [node[0] == "input" or not requires[k] for k, node in enumerate(nodes)]
    return requires, parents, is_leaf


def reach(parents, start, follow):
    seen, stack = set(), list(start)
    while stack:
        k = stack.pop()
        if k not in seen and follow(k):
            seen.add(k)
            stack.extend(parents[k])
    return seen


def predict_leaves(nodes):
    requires, parents, is_leaf = parts(nodes)
    reached = reach(parents, [len(nodes) - 1], lambda k: True)
    return is_leaf, [is_leaf[k] and k in reached for k in range(len(nodes))]
