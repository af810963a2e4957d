"""What a course author types to write a course, not to grade one.

- ``new_topic``: ``autograd-grader new-topic NAME --concept ID``, the command:
  checks the name, the concept id and the course folder, refuses before
  writing anything, then writes the topic's files.
- ``topic_files``: the text of each file of a new topic (stub, solution,
  checks with one worked check, a planted mistake), in English for the
  author to edit.
- ``registration``: the concept and messages block for ``exercises/conftest.py``,
  a new conftest or one added to an existing one without touching its code.
"""
