import pytest
import torch


pytestmark = pytest.mark.grade(concept="leaf")

OPS = ("add", "mul", "exp")


def y_of(x, w):
    return ((x + w) * (w + 1)).sum()


def dot(w, x):
    return (w * x).sum()


# -- random graphs for predict_leaves ------------------------------------------

def build(nodes):
    tensors = []
    with torch.enable_grad():
        for node in nodes:
            if node[0] == "input":
                tensors.append(torch.ones(2, dtype=torch.float64, requires_grad=node[1]))
            elif node[0] == "add":
                tensors.append(tensors[node[1]] + tensors[node[2]])
            elif node[0] == "mul":
                tensors.append(tensors[node[1]] * tensors[node[2]])
            else:
                tensors.append(torch.exp(tensors[node[1]]))
    return tensors


def random_graph(rng):
    """A few inputs, some requiring grad, then a few operations on earlier
    tensors; redrawn until the last tensor requires grad (so backward runs)."""
    for _ in range(200):
        count = rng.integers(2, 4)
        nodes = [["input", bool(rng.integers(0, 1))] for _ in range(count)]
        for _ in range(rng.integers(2, 5)):
            op = rng.choice(OPS)
            i = rng.integers(0, len(nodes) - 1)
            nodes.append(["exp", i] if op == "exp" else [op, i, rng.integers(0, len(nodes) - 1)])
        if build(nodes)[-1].requires_grad:
            return nodes
    raise RuntimeError("random_graph: no graph whose output requires grad was drawn")


def truth(nodes):
    tensors = build(nodes)
    with torch.enable_grad():
        tensors[-1].sum().backward()
    is_leaf = [bool(t.is_leaf) for t in tensors]
    has_grad = [bool(t.is_leaf and t.grad is not None) for t in tensors]
    return is_leaf, has_grad


def node_name(nodes, k):
    node = nodes[k]
    if node[0] == "input":
        return f"t{k} (input, requires_grad={node[1]})"
    if node[0] == "exp":
        return f"t{k} = exp(t{node[1]})"
    return f"t{k} = t{node[1]} {'+' if node[0] == 'add' else '*'} t{node[2]}"


# -- checks ----------------------------------------------------------------------

@pytest.mark.grade(points=2)
def test_tutorial_graph(submission, autograd, grade_rng, grade_device):
    shape = grade_rng.shape(ndim=grade_rng.integers(1, 2))
    x = grade_rng.randn(*shape, requires_grad=True)
    w = grade_rng.randn(*shape, requires_grad=True)
    result = submission("leaf").tutorial_graph(x, w)
    w_rec, x_rec, a, b, y = autograd.unpack(result, 5, "the returned (w, x, a, b, y)")
    for record, name in ((w_rec, "w"), (x_rec, "x")):
        autograd.assert_meta(record, name, is_leaf=True, grad_fn=None)
    autograd.check_grad((w_rec.grad, x_rec.grad), y_of, (x, w), wrt=(1, 0), names=("w.grad", "x.grad"),
                        holders=(w_rec, x_rec), role="leaf")
    xd, wd = x.detach(), w.detach()
    for record, name, value in ((a, "a", xd + wd), (b, "b", wd + 1), (y, "y", (xd + wd) * (wd + 1))):
        autograd.assert_meta(record, name, is_leaf=False)
        autograd.assert_close(record, value, name)
        autograd.assert_meta(record, name, has_grad=False, hint="diag.nonleaf_grad_kept")


@pytest.mark.grade(points=3)
def test_init_parameter(submission, autograd, grade_rng, grade_device):
    shape = grade_rng.shape(ndim=grade_rng.integers(1, 3))
    data, x = grade_rng.randn(*shape), grade_rng.randn(*shape)
    scale = float(grade_rng.numpy.uniform(0.01, 0.5))
    w = submission("leaf").init_parameter(data, scale, x)
    autograd.assert_meta(w, "w", is_leaf=True, requires_grad=True)
    autograd.assert_close(w, data * scale, "w (the values data * scale)")
    autograd.check_grad(w.grad, dot, (data * scale, x), wrt=(0,), names=("w.grad",), holders=(w,), role="leaf")


@pytest.mark.grade(points=4)
def test_predict_leaves(submission, autograd, grade_rng):
    nodes = random_graph(grade_rng)
    is_leaf, has_grad = truth(nodes)
    result = submission("leaf").predict_leaves(nodes)
    got_leaf, got_grad = autograd.unpack(result, 2, "the returned (is_leaf, has_grad)")
    labels = [node_name(nodes, k) for k in range(len(nodes))]
    kept_by_non_leaf = isinstance(got_grad, (list, tuple)) and any(
        g is True and not leaf for g, leaf in zip(got_grad, is_leaf))
    with autograd.part(2):
        autograd.assert_equal(got_leaf, is_leaf, "is_leaf", labels=[f"is_leaf of {n}" for n in labels])
    with autograd.part(2):
        autograd.assert_equal(got_grad, has_grad, "has_grad", labels=[f"has_grad of {n}" for n in labels],
                              hint="diag.nonleaf_grad_kept" if kept_by_non_leaf else None)