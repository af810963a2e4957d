"""The `leaf` topic: plausible mistakes fail on every seed with the
diagnosis that names them (and no other), predict_leaves may not build
tensors, and correct solutions in other styles pass.

Every planted mistake and every correct style is graded under the 20 seeds
of ``grade_seeds``, all in one grading session."""


from conftest import Mistake, assert_planted, instruction_only

from pytest_autograd_grader.i18n import msg

TOPIC = "leaf"

COPIES = ("diag.leaf.made_copy", "diag.leaf.detached_copy")
# The ids each check may answer with; a planted mistake must get its own and none of the others.
SPECIFIC = {
    "test_tutorial_graph": COPIES + ("diag.leaf.no_backward", "diag.leaf.grad_not_stored", "diag.graph.sum_not_mean",
                                     "diag.leaf.cut_off", "diag.leaf.path_cut",
                                     "diag.nonleaf_grad_kept", "diag.multiple_calls", "diag.graph.order",
                                     "diag.none_leaf", "diag.none_not_leaf"),
    "test_init_parameter": ("diag.leaf.scale_first", "diag.none_not_leaf", "diag.leaf.no_backward",
                            "diag.leaf.grad_not_stored", "diag.graph.sum_not_mean", "diag.none_leaf",
                            "diag.leaf.matmul_loss", "diag.leaf.returned_grad", "diag.implicit_grad"),
    "test_predict_leaves": ("req.leaf.no_tensors", "diag.leaf.created_leaf", "diag.leaf.op_without_grad",
                            "diag.leaf.any_input", "diag.leaf.recorded_op", "diag.leaf.no_requires_grad",
                            "diag.leaf.unreached", "diag.leaf.reached", "diag.leaf.nonleaf_no_grad", "diag.leaf.bools"),
}


# Helpers of the predict_leaves attempts: each attempt is right about something, wrong about one rule.
PREDICT_PARTS = """
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


def predict_leaves(nodes):"""


def predicting(what, body, diagnosis, texts=(), score=0):
    return Mistake("predict_leaves", what, PREDICT_PARTS + body, diagnosis, texts, score)


def tutorial(what, ending, diagnosis, texts=()):
    """tutorial_graph built right, then ``ending`` (backward and return)."""
    return Mistake("tutorial_graph", what, """
def tutorial_graph(x, w):
    a = x + w
    b = w + 1
    y = a * b
""" + ending, diagnosis, texts)


MISTAKES = [
    tutorial("copies of the leaves returned", """
    y.sum().backward()
    return w.clone(), x.clone(), a, b, y
""", "diag.leaf.made_copy", ("w: expected is_leaf = True, got False",
                             msg("diag.leaf.made_copy", what="w", grad_fn="CloneBackward0"))),
    tutorial("an intermediate returned detached", """
    y.sum().backward()
    return w, x, a.detach(), b, y
""", "diag.leaf.detached_copy", ("a: expected is_leaf = False, got True", msg("diag.leaf.detached_copy", what="a"))),
    tutorial("torch.autograd.grad: gradients computed, .grad left empty", """
    torch.autograd.grad(y.sum(), (w, x))
    return w, x, a, b, y
""", "diag.leaf.grad_not_stored", ("w.grad: expected a gradient, got None",)),
    tutorial("no backward at all", """
    loss = y.sum()
    return w, x, a, b, y
""", "diag.leaf.no_backward", ("w.grad: expected a gradient, got None",)),
    tutorial("a mean where the loss is a sum", """
    y.mean().backward()
    return w, x, a, b, y
""", "diag.graph.sum_not_mean", ("w.grad: values differ",)),
    tutorial("the intermediates' gradients kept", """
    for t in (a, b, y):
        t.retain_grad()
    y.sum().backward()
    return w, x, a, b, y
""", "diag.nonleaf_grad_kept", ("a: expected has_grad = False, got True",)),
    tutorial("backward twice: the leaves' gradients add up", """
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    return w, x, a, b, y
""", "diag.multiple_calls", (msg("diag.multiple_calls", k=2, calls=2, name="x"),)),
    Mistake("tutorial_graph", "x.data used in a = x + w: x cut off from the graph", """
def tutorial_graph(x, w):
    a = x.data + w
    b = w + 1
    y = a * b
    y.sum().backward()
    return w, x, a, b, y
""", "diag.leaf.cut_off", ("x.grad: expected a gradient, got None", msg("diag.leaf.cut_off", what="x"))),
    Mistake("tutorial_graph", "b computed under torch.no_grad(): w.grad misses the path through b", """
def tutorial_graph(x, w):
    a = x + w
    with torch.no_grad():
        b = w + 1
    y = a * b
    y.sum().backward()
    return w, x, a, b, y
""", "diag.leaf.path_cut", (msg("diag.leaf.path_cut", what="b"),)),
    Mistake("init_parameter", "the classic: requires_grad first, then scaled", """
def init_parameter(data, scale, x):
    w = data.requires_grad_(True) * scale
    (w * x).sum().backward()
    return w
""", "diag.leaf.scale_first", ("w: expected is_leaf = True, got False",
                               msg("diag.leaf.scale_first", grad_fn="MulBackward0"))),
    Mistake("init_parameter", "a mean where the loss is a sum", """
def init_parameter(data, scale, x):
    w = (data * scale).requires_grad_()
    (w * x).mean().backward()
    return w
""", "diag.graph.sum_not_mean", ("w.grad: values differ",)),
    Mistake("init_parameter", "no backward at all", """
def init_parameter(data, scale, x):
    w = (data * scale).requires_grad_()
    loss = (w * x).sum()
    return w
""", "diag.leaf.no_backward", ("w.grad: expected a gradient, got None",)),
    Mistake("init_parameter", "torch.autograd.grad: .grad left empty", """
def init_parameter(data, scale, x):
    w = (data * scale).requires_grad_()
    torch.autograd.grad((w * x).sum(), w)
    return w
""", "diag.leaf.grad_not_stored", ("w.grad: expected a gradient, got None",)),
    Mistake("init_parameter", "the loss as (w @ x).sum(): a dot product for 1-D tensors only", """
def init_parameter(data, scale, x):
    w = (data * scale).requires_grad_(True)
    (w @ x).sum().backward()
    return w
""", "diag.leaf.matmul_loss"),
    Mistake("init_parameter", "the loss as torch.dot(w, x): 1-D tensors only", """
def init_parameter(data, scale, x):
    w = (data * scale).requires_grad_(True)
    torch.dot(w, x).backward()
    return w
""", "diag.leaf.matmul_loss"),
    Mistake("init_parameter", "w.grad returned instead of w", """
def init_parameter(data, scale, x):
    w = (data * scale).requires_grad_(True)
    (w * x).sum().backward()
    return w.grad
""", "diag.leaf.returned_grad"),
    predicting("an unused input (or one the loss does not depend on) given a gradient", """
    requires, parents, is_leaf = parts(nodes)
    return is_leaf, [leaf and r for leaf, r in zip(is_leaf, requires)]
""", "diag.leaf.unreached", ("2 of 4 parts right", "has_grad of t", "(graph: nodes = ["), score=2),
    predicting("only the tensors you create are leaves", """
    requires, parents, is_leaf = parts(nodes)
    reached = reach(parents, [len(nodes) - 1], lambda k: requires[k])
    has_grad = [is_leaf[k] and requires[k] and k in reached for k in range(len(nodes))]
    return [node[0] == "input" for node in nodes], has_grad
""", "diag.leaf.op_without_grad", ("is_leaf of t4 = t", "expected True, got False"), score=2),
    Mistake("predict_leaves", "the graph simulated with tensors: right answers, against the instructions", """
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
""", "req.leaf.no_tensors", ("(first: ones)",), instruction_only(4)),
    predicting("right answers as 1 and 0", """
    requires, parents, is_leaf = parts(nodes)
    reached = reach(parents, [len(nodes) - 1], lambda k: requires[k])
    return ([int(leaf) for leaf in is_leaf],
            [int(is_leaf[k] and requires[k] and k in reached) for k in range(len(nodes))])
""", "diag.leaf.bools", ("expected True or False (a bool), got a whole number (an int): 1",)),
    predicting("every tensor that requires grad keeps .grad", """
    requires, parents, is_leaf = parts(nodes)
    return is_leaf, list(requires)
""", ("diag.leaf.nonleaf_no_grad", "diag.leaf.unreached"), ("2 of 4 parts right",), score=2),
    predicting("every leaf the walk back from the loss meets gets .grad", """
    requires, parents, is_leaf = parts(nodes)
    reached = reach(parents, [len(nodes) - 1], lambda k: True)
    return is_leaf, [is_leaf[k] and k in reached for k in range(len(nodes))]
""", "diag.leaf.no_requires_grad", ("2 of 4 parts right",), score=2),
    predicting("an operation needs ALL its inputs to require grad", """
    requires = []
    for node in nodes:
        requires.append(bool(node[1]) if node[0] == "input" else all(requires[i] for i in node[1:]))
    is_leaf = [node[0] == "input" or not requires[k] for k, node in enumerate(nodes)]
    _, parents, _ = parts(nodes)
    reached = reach(parents, [len(nodes) - 1], lambda k: requires[k])
    return is_leaf, [is_leaf[k] and requires[k] and k in reached for k in range(len(nodes))]
""", ("diag.leaf.any_input", "diag.leaf.recorded_op", "diag.leaf.reached")),
    predicting("a leaf is what does not require grad; the walk starts at the last tensor's inputs", """
    requires, parents, _ = parts(nodes)
    is_leaf = [not r for r in requires]
    reached = reach(parents, parents[-1], lambda k: requires[k])
    return is_leaf, [nodes[k][0] == "input" and requires[k] and k in reached for k in range(len(nodes))]
""", ("diag.leaf.created_leaf", "diag.leaf.reached"),
        ("is_leaf of t", "has_grad of t1 (input, requires_grad=True): expected True, got False")),
    predicting("an exp of a tensor that requires grad taken for a leaf", """
    requires, parents, is_leaf = parts(nodes)
    reached = reach(parents, [len(nodes) - 1], lambda k: requires[k])
    is_leaf = [node[0] in ("input", "exp") or not requires[k] for k, node in enumerate(nodes)]
    return is_leaf, [nodes[k][0] == "input" and requires[k] and k in reached for k in range(len(nodes))]
""", "diag.leaf.recorded_op", ("is_leaf of t7 = exp(t6)",), score=2),
]

# Correct, in other styles than the reference's.
OTHER_STYLES = {
    "tutorial_graph": """
def tutorial_graph(x, w):
    a = torch.add(w, x)
    b = torch.add(w, 1)
    y = torch.mul(a, b)
    y.backward(torch.ones_like(y))
    return [w, x, a, b, y]
""",
    "init_parameter": """
def init_parameter(data, scale, x):
    w = data * scale
    w.requires_grad = True
    torch.sum(torch.mul(w, x)).backward()
    return w
""",
    # Recursion instead of a stack, numpy arrays instead of lists.
    "predict_leaves": """
def predict_leaves(nodes):
    import numpy as np
    requires = []
    for node in nodes:
        requires.append(node[1] if node[0] == "input" else any(requires[i] for i in node[1:]))
    leaf = np.array([node[0] == "input" or not requires[k] for k, node in enumerate(nodes)])
    grad = np.zeros(len(nodes), dtype=bool)

    def visit(k):
        if requires[k]:
            if leaf[k]:
                grad[k] = True
            for i in nodes[k][1:] if nodes[k][0] != "input" else ():
                visit(i)

    visit(len(nodes) - 1)
    return leaf, grad
""",
}
# A parameter made as torch.nn.Parameter.
PARAMETER = {"init_parameter": """
def init_parameter(data, scale, x):
    w = torch.nn.Parameter(data * scale)
    (w * x).sum().backward()
    return w
"""}

# Correct again: method calls and autograd.backward; a parameter filled in
# place under no_grad, or rebuilt from a Python list, or detached first.
MORE_STYLES = {
    "tutorial_graph": """
def tutorial_graph(x, w):
    a = w.add(x)
    b = w.add(1.0)
    y = a.mul(b)
    torch.autograd.backward([y], [torch.ones_like(y)])
    return (w, x, a, b, y)
""",
    "init_parameter": """
def init_parameter(data, scale, x):
    w = torch.empty_like(data)
    with torch.no_grad():
        w.copy_(data).mul_(scale)
    w.requires_grad_()
    torch.einsum('...,...->', w, x).backward()
    return w
""",
}
FROM_LIST = {"init_parameter": """
def init_parameter(data, scale, x):
    w = torch.tensor((data * scale).tolist(), dtype=torch.float64, requires_grad=True)
    (w * x).sum().backward()
    return w
"""}
DETACHED_FIRST = {"init_parameter": """
def init_parameter(data, scale, x):
    w = (data * scale).detach().requires_grad_()
    w.mul(x).sum().backward()
    return w
"""}

CORRECT = {"styles": OTHER_STYLES, "parameter": PARAMETER, "more": MORE_STYLES, "from_list": FROM_LIST,
           "detached_first": DETACHED_FIRST}


def test_planted_mistakes_fail_and_other_styles_pass_on_every_seed(pytester):
    assert_planted(pytester, TOPIC, MISTAKES, CORRECT, SPECIFIC)
