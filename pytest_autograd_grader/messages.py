"""Every sentence the grader says to a student or an instructor.

Code refers to messages by id and fills in named fields; a second language is
a second dict with the same keys, chosen with ``set_language``.
"""

from __future__ import annotations

EN: dict[str, str] = {
    # -- usage errors (instructor) -----------------------------------------
    "usage.submission_missing": "--grade-submission: the directory {path!r} does not exist; pass the folder that holds the student's modules",
    "usage.submission_not_dir": "--grade-submission: {path!r} is a file, not a directory; pass the folder that holds the student's modules",
    "usage.seed": "--grade-seed: {value!r} is not a seed; use a whole number such as 1234, or 'random'",
    "usage.report_dir": "{option}: cannot write {path!r} because the directory {directory!r} does not exist; create it or choose another path",
    "usage.report_unwritable": "{option}: cannot write {path!r}: the directory {directory!r} is not writable",
    "usage.report_is_dir": "{option}: {path!r} is a directory; give a file name such as {path}/report.json",
    "usage.fail_under": "--grade-fail-under: {value!r} is not a percentage; use a number from 0 to 100",
    "usage.timeout": "--grade-timeout: {value!r} is not a number of seconds; use a positive number such as 10",
    "usage.device": "--grade-device: {value!r} is not a device; use cpu, cuda, auto or all",
    "usage.student_config": "--grade-submission: pytest read its configuration from {inifile!r}, inside the submission directory {path!r}, so the student's files would configure the grading; write --grade-submission={path} (with '=') and pass your own configuration with -c",
    "usage.submission_collected": "--grade-submission: the submission {path!r} lies in the test path {tests!r}, so pytest would collect the student's conftest.py and test files; pass only the directory of your checks as test paths, e.g. pytest --grade checks/ --grade-submission={path}",
    "usage.isolation": "--grade-isolation: {value!r} is not a mode; use auto, bwrap, user or process",
    "usage.isolation_unavailable": "--grade-isolation {mode}: {problem}",
    "usage.answer_limit": "--grade-answer-limit: {value!r} is not a size in megabytes; use a positive number such as 8",
    "usage.memory": "--grade-memory: {value!r} is not a size in megabytes; use a positive whole number such as 4096",
    # -- marker problems (instructor) --------------------------------------
    "marker.no_concept": "{where}: this check has no concept; add @pytest.mark.grade(concept=...) with one of: {known}",
    "marker.unknown_concept": "{where}: unknown concept {concept!r}; use one of: {known} (or add it with the pytest_grade_concepts hook)",
    "marker.bad_points": "{where}: points must be a positive number, got {points!r}",
    "marker.bad_hidden": "{where}: hidden must be True or False, got {hidden!r}",
    "marker.positional": "{where}: use keyword arguments, as in @pytest.mark.grade(concept='leaf', points=2)",
    "collect.error": "could not load the checks in {path} ({cause}); none of them were graded:\n{detail}",
    # -- report lines ------------------------------------------------------
    "feedback.hidden": "A hidden check on '{title}' failed.",
    "feedback.header": "[{title}] {what}",
    "feedback.did_not_finish": "the check did not finish",
    "header": "grade: seed {seed} (reproduce with --grade-seed {seed}), device {device}, submission {submission}, isolation {isolation}",
    "header.missing": "grade: not protected: {what}",
    "report.isolation": "grade: student code ran with isolation {mode}",
    "header.fix": "grade: to protect it: {fix}",
    "header.reason": "grade: stronger isolation was not available: {reason}",
    # -- isolation (instructor) --------------------------------------------
    "isolation.inline": "--grade-inline runs student code inside pytest itself; never use it on code you do not trust",
    "isolation.needs_linux": "{what} needs Linux",
    "isolation.no_bwrap": "bubblewrap is not installed (apt-get install bubblewrap)",
    "isolation.bwrap_failed": "bubblewrap could not start a sandbox here ({detail}); inside Docker, allow user namespaces or use --grade-isolation user as root",
    "isolation.user_needs_root": "workers can drop to a uid of their own only when the grader runs as root",
    "isolation.unreadable": "the grader runs as root and student code runs as an unprivileged user, who cannot enter {path}; make it readable by others (chmod o+rx {path}) or install Python where every user can read it",
    "isolation.missing.read": "student code can read every file other users may read: keep hidden checks in a directory only root can read (chmod 700)",
    "isolation.missing.network": "student code can use the network",
    "isolation.missing.own_user": "student code runs as your own user: it can read and write your files (checks and reports included) and signal your processes",
    "isolation.fix.bwrap": "install bubblewrap (apt-get install bubblewrap) for a private filesystem and no network",
    "isolation.fix.process": "install bubblewrap (apt-get install bubblewrap), or run the grader as root for --grade-isolation user",
    "summary.title": "grade",
    "summary.total": "TOTAL",
    "summary.json": "report written to {path}",
    "summary.fail_under": "total {percent:.1f}% is {relation} the required {required:.1f}%",
    "summary.errors": "{count} check(s) are broken (status error); ask your instructor:",
    # -- blame and report files ----------------------------------------------
    "blame.malformed": "your answer does not have the form this check expects ({error})",
    "blame.redacted": "<text from the student's code>",
    "report.write_failed": "{option}: could not write {path}: {reason}",
    "report.reason.is_dir": "it is a directory",
    "report.reason.no_dir": "the directory {directory} does not exist",
    "report.reason.not_dir": "{directory} is not a directory",
    "report.reason.denied": "permission denied",
    # -- the student's side ------------------------------------------------
    "student.module_missing": "could not find {module}.py in {directory}: create it (start from the exercise file) and keep that file name",
    "student.syntax_error": "{file} has a syntax error at line {line}: {message}\n    {code}",
    "student.import_error": "{module}.py could not be loaded: {type}: {message}{where}",
    "student.not_implemented": "not implemented yet: {module}.{function}",
    "student.no_function": "{module}.py has no function {function!r}; keep the names of the exercise file",
    "student.raised": "{module}.{function} raised {type}: {message}{where}",
    "student.where": " (at {file}:{line}: {code})",
    "student.bad_argument": "this check passes {type} to the student's function, which cannot cross to the student's code; pass tensors, numbers, strings, containers or module-level functions (check author: fix the check)",
    "student.lambda": "this check passes {name} to the student's function, but only module-level functions can be passed by name (check author: define it at module level)",
    "student.timeout": "{module}.{function} did not finish within {seconds:g} s: look for a loop that never ends",
    "student.crashed": "the process running {module}.{function} died ({how}) while running your code",
    "student.exit": "{module}.{function} called sys.exit({code}); return a value instead of exiting",
    "student.interrupt": "{module}.{function} raised KeyboardInterrupt; remove it from your code",
    "student.memory": "{module}.{function} ran out of memory (limit {limit} MB): avoid building huge tensors",
    "student.submission_too_large": "the submission folder holds more than {files} files or {mb} MB; the grader copies it for your code to run, so remove large or generated files from it",
    "student.answer_too_large": "{module}.{function} returned {size:.1f} MB of data; at most {limit:g} MB is accepted: return smaller values",
    "student.output": "\nwhat your code printed:\n{output}",
    # -- answers the grader refuses (records.Limits); {reason} is a limit.* text,
    # and none of these repeats text from the student's code
    "student.unreadable": "the answer of {module}.{function} could not be read: {reason}",
    "limit.max_bytes": "it is {measured} bytes long; at most {limit} bytes are accepted",
    "limit.max_header": "its JSON part is {measured} bytes long; at most {limit} bytes are accepted",
    "limit.header_length": "it announces {measured} bytes of JSON but holds only {limit}",
    "limit.max_items": "it holds at least {measured} values; at most {limit} are accepted (return fewer values)",
    "limit.max_depth": "it is nested at least {measured} levels deep; at most {limit} levels are accepted",
    "limit.max_string": "it holds a text of {measured} characters; at most {limit} are accepted",
    "limit.max_dims": "it holds a tensor with {measured} dimensions; at most {limit} are accepted",
    "limit.dim_size": "it holds a tensor with a dimension of size {measured}; sizes from 0 to {limit} are accepted",
    "limit.dtype": "it holds a tensor of a dtype the grader does not compare (it accepts {dtypes})",
    "limit.device": "it holds a tensor on a device other than cpu or cuda (a meta tensor, say, which holds no values); return tensors on the device they came from",
    "limit.tensor_bytes": "it holds a tensor that declares {measured} bytes where its shape and dtype need {needed}",
    "limit.tensor_past_end": "it holds a tensor of {measured} bytes where only {limit} bytes are left",
    "limit.trailing": "it holds {measured} bytes after its last tensor",
    "limit.field_type": "its field {field} has type {type}",
    "limit.not_record": "it holds a {type} where a record belongs",
    "limit.unknown_record": "it holds a record of an unknown kind",
    "limit.dict_keys": "it holds a dict with {measured} keys for {limit} values",
    "limit.malformed": "it is not in the grader's format ({problem})",
    # how an error PyTorch never raised came about (cmp.error_forged's {how})
    "cmp.forged_never_raised": "never raised",
    "cmp.forged_student": "raised by your own code",
    "cmp.forged_quoted": "made from your own text",
    # -- comparisons -------------------------------------------------------
    "cmp.mismatch": "{what}: values differ from torch.autograd",
    "cmp.expected": "  expected {desc}",
    "cmp.produced": "  produced {desc}",
    "cmp.largest": "  largest difference {diff:.3g} at index {index} (tolerance: rtol {rtol:g}, atol {atol:g})",
    "cmp.not_tensor": "{what}: expected a tensor, got {got}",
    "cmp.none": "{what}: expected a gradient, got None",
    "cmp.shape": "{what}: expected shape {expected}, got shape {got}",
    "cmp.dtype": "{what}: expected dtype {expected}, got {got}",
    "cmp.device": "{what}: expected a tensor on {expected}, got one on {got}; keep tensors on the device they came from",
    "cmp.nonfinite": "{what}: contains {kind} values",
    "cmp.count": "{what}: expected {expected} values, got {got}",
    "cmp.container": "{what}: expected {expected}, got {got}",
    "cmp.value": "{what}: expected {expected!r}, got {got!r}",
    "cmp.value_kind": "{what}: expected {expected}, got {got}",
    "kind.bool": "True or False (a bool)",
    "kind.int": "a whole number (an int)",
    "kind.float": "a number (a float)",
    "kind.str": "a string",
    "kind.value": "{kind}: {value}",
    "cmp.meta": "{what}: expected {field} = {expected!r}, got {got!r}",
    "cmp.no_error": "{what}: expected PyTorch's error '{text}', but no error was raised",
    "cmp.wrong_error": "{what}: expected PyTorch's error '{text}', got {type}: {message}",
    "cmp.not_error": "{what}: expected the caught error '{text}', got {got}",
    "cmp.error_forged": "{what}: this {type} was {how}, not by PyTorch; make the mistake really happen and return the exception PyTorch raises",
    "cmp.gradcheck": "{what}: gradcheck failed: the backward does not agree with finite differences of the forward\n{detail}",
    "cmp.parts": "{passed:g} of {total:g} parts right",
    "cmp.credit": "partial credit: {fraction:.0%} of the points",
    # -- diagnoses ---------------------------------------------------------
    "diag.multiple": "Likely mistake: the gradient is {k} times too large. .grad adds up over backward calls: zero it (x.grad = None or optimizer.zero_grad()) before each backward.",
    "diag.multiple_calls": "Likely mistake: the gradient is {k} times too large, and your code called backward {calls} times: .grad adds up over backward calls. Zero it (x.grad = None or optimizer.zero_grad()) before each backward, or call backward once.",
    "diag.mean_sum": "Likely mistake: the gradient is {k} times too large, and {k} is the number of elements averaged: you used a sum where a mean was asked (or dropped the 1/N).",
    "diag.fraction": "Likely mistake: the gradient is 1/{k} of the expected one. Accumulation was asked for: do not zero .grad between the {k} backward calls.",
    "diag.running_sum": "Likely mistake: the gradient of step {step} is the sum of the gradients of steps 1 to {step}: .grad was never cleared. Zero it (w.grad = None or optimizer.zero_grad()) before each backward.",
    "diag.factor": "Likely mistake: the gradient is {k} times too large after a single backward, so a constant factor in your derivative is off: check each local derivative in the chain rule.",
    "diag.mean_twice": "Likely mistake: the gradient is 1/{k} of the expected one, and {k} is the number of elements averaged: the mean's 1/N was applied twice, or a mean was used where a sum was asked.",
    "diag.too_small": "Likely mistake: the gradient is 1/{k} of the expected one. A tensor used more than once needs the gradients of all its uses added up: accumulate with += instead of assigning with = (and do not zero .grad between backward calls whose gradients should add up).",
    "diag.ones": "Likely mistake: this is the vector-Jacobian product with a vector of ones. Pass the given gradient (grad_tensors / gradient=v) instead of calling .sum() or using torch.ones_like.",
    "diag.sign": "Likely mistake: the sign is flipped; check the direction of a subtraction in your chain rule.",
    "diag.transpose": "Likely mistake: the gradient is transposed; for y = x @ W, dL/dx = g @ W.T and dL/dW = x.T @ g.",
    "diag.none_leaf": "Likely mistake: this leaf has no gradient. It was not part of the graph that backward ran through: make it with requires_grad=True and use it in the computation before calling backward.",
    "diag.none_not_leaf": "Likely mistake: this tensor was made by an operation (it has grad_fn {grad_fn}), so it is not a leaf and does not keep .grad. Create parameters directly, e.g. torch.randn(..., requires_grad=True), or move them with .to() before setting requires_grad.",
    "diag.none_intermediate": "Likely mistake: an intermediate tensor keeps its gradient only if you call .retain_grad() on it before backward.",
    "diag.no_create_graph": "Likely mistake: the second derivative is missing. Pass create_graph=True to torch.autograd.grad (or backward) so the first gradient is itself differentiable.",
    "diag.second_zero": "Likely mistake: the second derivative is zero everywhere: the first gradient was detached from the graph. Compute it with create_graph=True.",
    "diag.requires_grad": "Likely mistake: the tensor has no graph. It was made under torch.no_grad(), after .detach(), .item() or a numpy round trip, or from a leaf without requires_grad=True.",
    "diag.backward_twice": "Likely mistake: the graph's saved tensors were freed by the first backward. Pass retain_graph=True to every backward except the last.",
    "diag.inplace_leaf": "Likely mistake: a leaf that requires grad was changed in place. Do parameter updates inside `with torch.no_grad():`.",
    "diag.inplace_saved": "Likely mistake: a tensor that backward needs was changed in place. Use an out-of-place operation (y = y * 2 instead of y *= 2) or clone it first.",
    "diag.implicit_grad": "Likely mistake: backward on a non-scalar needs a gradient argument: y.backward(gradient=v) or torch.autograd.backward(y, grad_tensors=v).",
    "diag.shape_mismatch": "Likely mistake: the gradient passed to backward must have the shape of the output it belongs to.",
    "diag.int_requires_grad": "Likely mistake: only floating point tensors can require gradients; make it with dtype=torch.float32 or float64.",
    "diag.nonleaf_requires_grad": "Likely mistake: requires_grad can only be set on leaves; set it where the tensor is created.",
    "diag.unused_input": "Likely mistake: an input was not used to compute the output; pass allow_unused=True or leave it out of inputs.",
    "diag.broadcast": "Likely mistake: the gradient has the broadcast shape {got} instead of the parameter's shape {expected}; sum over the broadcast axes in backward.",
    "diag.nonleaf_grad_kept": "Likely mistake: intermediate nodes still hold .grad after backward; only leaves should keep their gradient.",
    "diag.gradcheck_float32": "Likely mistake: gradcheck needs float64 inputs; float32 finite differences are too coarse.",
    # -- concept titles (concepts.BUILTIN_CONCEPTS) --------------------------
    "concept.graph": "Computational graphs",
    "concept.leaf": "Leaf tensors",
    "concept.retain_grad": "Gradients of intermediates",
    "concept.dynamic_graph": "Dynamic graphs",
    "concept.retain_graph": "Backward twice",
    "concept.vector_backward": "Backward of non-scalars",
    "concept.accumulation": "Gradient accumulation",
    "concept.inplace": "In-place operations",
    "concept.no_grad": "Turning gradients off",
    "concept.higher_order": "Higher-order gradients",
    "concept.custom_function": "Custom autograd Functions",
    "concept.engine": "Your own autograd engine",
    # -- topics graph, leaf, retain_grad: their checks' requirements and diagnoses
    # -- topics dynamic_graph, retain_graph, vector_backward
    # -- topics accumulation, inplace, no_grad
    # -- topics higher_order, custom_function
}

_catalogue: dict[str, str] = EN


def set_language(catalogue: dict[str, str]) -> None:
    """Use another catalogue; ids it lacks fall back to English."""
    global _catalogue
    _catalogue = {**EN, **catalogue}


def has_message(key: str) -> bool:
    return key in _catalogue


def msg(key: str, **fields: object) -> str:
    return _catalogue[key].format(**fields)
