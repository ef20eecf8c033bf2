"""Verifiable rewards of the paper's setting (docs/design.md §1, §3), one function per domain.

- math: the last ``\\boxed{}`` answer against the gold answer, checked by math-verify in a
  worker process with a hard time bound (``math_answer.MathVerifier``);
- code: the response's program against its problem's tests in the sandbox, three test formats
  (``code_tests.CodeTests``); ``problem_tests`` reads a problem record in its dataset's own
  format.

``python -m mintrl.rewards --domain {math,code} IN.jsonl OUT.jsonl`` re-scores a file so that
users can audit rewards (``mintrl/rewards/__main__.py``).
"""

from mintrl.rewards.code_tests import CodeResult, CodeTests, score_program
from mintrl.rewards.math_answer import MathResult, MathVerifier, last_boxed
from mintrl.rewards.records import problem_tests

__all__ = ["CodeResult", "CodeTests", "MathResult", "MathVerifier", "last_boxed",
           "problem_tests", "score_program"]
