"""The course's own registrations, found by pytest beside its checks in
every layout (self-check, instructor CI, a class run): its concept, and
its messages in English and Chinese."""

from pytest_autograd_grader import Concept

MESSAGES = {
    "en": {
        "concept.hooks": "Gradient hooks",
        "hooks.label.grad": "x.grad with s = {s}",
        "hooks.req.hook": "change the gradient with a hook on x (x.register_hook), not by editing x.grad afterwards",
        "diag.hooks.unscaled": "x.grad is -g: your hook flips the gradient's sign but does not multiply it by s = {s}.",
        "diag.hooks.not_negated": "x.grad is s*g: your hook scales the gradient but keeps its sign; return -s * g.",
        "diag.hooks.no_return": "x.grad is the plain gradient g: a hook changes the gradient only through what it "
                                "returns; return the new gradient from it.",
    },
    "zh": {
        "concept.hooks": "梯度钩子",
        "hooks.label.grad": "s = {s} 时的 x.grad",
        "hooks.req.hook": "请用 x 上的钩子（x.register_hook）改变梯度，而不是在反向传播之后修改 x.grad",
        "diag.hooks.unscaled": "x.grad 等于 -g：你的钩子翻转了梯度的符号，却没有乘以 s = {s}。",
        "diag.hooks.not_negated": "x.grad 等于 s*g：你的钩子缩放了梯度，却没有改变符号；应返回 -s * g。",
        "diag.hooks.no_return": "x.grad 仍是原来的梯度 g：钩子只能通过返回值改变梯度；请从钩子中返回新的梯度。",
    },
}


def pytest_grade_concepts(config):
    return [Concept("hooks", "Gradient hooks", "a hook changes a gradient on its way back")]


def pytest_grade_messages(config):
    return MESSAGES
