#!/bin/bash
# Runs the checks in /tests/check.py against the agent's fizzbuzz.py.
if python3 /tests/check.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
