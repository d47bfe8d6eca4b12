"""The checks of the fizzbuzz task (run from the workspace)."""

import importlib
import sys

sys.path.insert(0, ".")
fizzbuzz = importlib.import_module("fizzbuzz").fizzbuzz

expected = {
    1: "1",
    3: "Fizz",
    5: "Buzz",
    9: "Fizz",
    10: "Buzz",
    15: "FizzBuzz",
    30: "FizzBuzz",
    7: "7",
}
wrong = {n: fizzbuzz(n) for n, want in expected.items() if fizzbuzz(n) != want}
print("wrong:", wrong if wrong else "none")
sys.exit(1 if wrong else 0)
