"""The intermediates' gradients kept.

check: test_tutorial_graph
expected diagnosis: diag.nonleaf_grad_kept
"""

import torch


def tutorial_graph(x, w):
    a = x + w
    b = w + 1
    y = a * b

    for t in (a, b, y):
        t.retain_grad()
    y.sum().backward()
    return w, x, a, b, y


def init_parameter(data, scale, x):
    w = (data * scale).requires_grad_(True)
    loss = (w * x).sum()
    loss.backward()
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
