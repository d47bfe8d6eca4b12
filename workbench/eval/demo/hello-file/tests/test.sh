#!/bin/bash
# Reward 1 when hello.txt holds exactly the expected line.
if [ "$(cat hello.txt 2>/dev/null)" = "Hello, workbench!" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "hello.txt is missing or wrong"
  echo 0 > /logs/verifier/reward.txt
fi
